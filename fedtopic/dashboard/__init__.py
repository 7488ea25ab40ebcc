"""The live dashboard (``fedtopic dashboard``) and the static report (``fedtopic report``)."""
