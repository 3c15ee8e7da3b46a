"""passlens explorer: interactive IR explorer/debugger front end."""
