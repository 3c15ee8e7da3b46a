"""passlens's compiler core: IR, ops, frontends, passes, interpreter and backend."""
