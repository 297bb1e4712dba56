from jaxfuse_lint.launch import main

main()
