"""The experiment platform: Optuna sweeps (`sweep`) on their study storage (`study`), MLflow and TensorBoard
tracking (`tracking`, a run's hooks), passwords kept out of what is printed and written (`redaction`), and the
evaluation statistics over finished runs (`statistics`, against the figures in `published`)."""
