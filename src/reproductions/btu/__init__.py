"""The BTU paper's apparatus (Hochreiner et al.): VISP Alg. 1-3, its simulation and tables."""
