"""`jaxfuse-lint review`: lint the lines a pull request changed and write a GitHub review payload."""
