"""`jaxfuse-lint server`: a Language Server (pygls) for editors. Imported only by that command."""
