"""gFedNTM (Calvo-Bartolomé et al.): federated ProdLDA / CombinedTM by Sync-Opt."""
