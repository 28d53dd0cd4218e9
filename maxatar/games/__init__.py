"""The environments, one folder each: `rules.py` (the JAX game), `twin.py` (its plain-Python twin). Ids are in
`maxatar.registry`."""
