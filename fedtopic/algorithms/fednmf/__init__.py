"""FedNMF and FedNMF+MI (Si et al.): the client party and the server rules."""
