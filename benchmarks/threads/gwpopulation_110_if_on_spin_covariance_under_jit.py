# Thread: https://github.com/ColmTalbot/gwpopulation/pull/110
# Diagnosis (@jacobgolomb, PR author, "Make GaussianChiEffChiP jittable": "removed if statement from gaussianchieffchip model"; merged by @ColmTalbot, gwpopulation maintainer)
# Problem: the population model branches with a Python `if` on the hyper-parameter `spin_covariance`; in the JAX backend the likelihood is jitted over the hyper-parameters, so the comparison is traced and has no truth value.
# Written for this corpus after gwpopulation/models/spin.py before that PR (same structure, reduced: the truncated normals and the normalisation are simplified; xp is jax.numpy, as with the JAX backend).
import jax
import jax.numpy as xp


def truncnorm(xx, mu, sigma, high, low):
    norm = jax.scipy.stats.norm.cdf((high - mu) / sigma) - jax.scipy.stats.norm.cdf((low - mu) / sigma)
    prob = xp.exp(-((xx - mu) ** 2) / (2 * sigma**2)) / (2 * xp.pi) ** 0.5 / sigma / norm
    return prob * (xx >= low) * (xx <= high)


def gaussian_chi_eff(dataset, mu_chi_eff, sigma_chi_eff):
    return truncnorm(dataset["chi_eff"], mu=mu_chi_eff, sigma=sigma_chi_eff, low=-1, high=1)


def gaussian_chi_p(dataset, mu_chi_p, sigma_chi_p):
    return truncnorm(dataset["chi_p"], mu=mu_chi_p, sigma=sigma_chi_p, low=0, high=1)


def unnormalized_2d_gaussian(xx, yy, mu_x, mu_y, sigma_x, sigma_y, covariance):
    xx = (xx - mu_x) / sigma_x
    yy = (yy - mu_y) / sigma_y
    return xp.exp(-(xx**2 + yy**2 - 2 * covariance * xx * yy) / (2 * (1 - covariance**2)))


class GaussianChiEffChiP(object):

    def __init__(self):
        self.chi_eff = xp.linspace(-1, 1, 500)
        self.chi_p = xp.linspace(0, 1, 250)
        self.chi_eff_grid, self.chi_p_grid = xp.meshgrid(self.chi_eff, self.chi_p)

    def __call__(
        self, dataset, mu_chi_eff, sigma_chi_eff, mu_chi_p, sigma_chi_p, spin_covariance
    ):
        if spin_covariance == 0:  # expect: JF402
            prob = gaussian_chi_eff(
                dataset=dataset,
                mu_chi_eff=mu_chi_eff,
                sigma_chi_eff=sigma_chi_eff,
            )
            prob *= gaussian_chi_p(
                dataset=dataset, mu_chi_p=mu_chi_p, sigma_chi_p=sigma_chi_p
            )
        else:
            prob = unnormalized_2d_gaussian(
                dataset["chi_eff"], dataset["chi_p"], mu_chi_eff, mu_chi_p,
                sigma_chi_eff, sigma_chi_p, spin_covariance,
            )
            normalization = xp.trapezoid(xp.trapezoid(unnormalized_2d_gaussian(
                self.chi_eff_grid, self.chi_p_grid, mu_chi_eff, mu_chi_p,
                sigma_chi_eff, sigma_chi_p, spin_covariance), self.chi_eff), self.chi_p)
            prob /= normalization
            prob *= xp.abs(dataset["chi_eff"]) <= 1
            prob *= (dataset["chi_p"] <= 1) * (dataset["chi_p"] >= 0)
        return prob


model = GaussianChiEffChiP()
data = {"chi_eff": xp.linspace(-0.5, 0.5, 10), "chi_p": xp.linspace(0.1, 0.9, 10)}
jax.jit(lambda params: model(data, **params))(
    dict(mu_chi_eff=0.0, sigma_chi_eff=0.1, mu_chi_p=0.2, sigma_chi_p=0.1, spin_covariance=0.3))
