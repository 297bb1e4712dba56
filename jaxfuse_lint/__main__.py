from jaxfuse_lint.cli import main

main()
