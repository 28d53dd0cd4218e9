"""One module per environment; each imports only `maxatar.core`."""
