"""passlens widgets: Jupyter widgets for viewing compiler IR."""
