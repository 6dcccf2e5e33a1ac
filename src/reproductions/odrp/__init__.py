"""ODRP (Cardellini et al.): the paper's DEBS 2015 evaluation instance (Sec. 6.1, Table 2)."""
