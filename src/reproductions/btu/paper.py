"""The paper's published numbers (Tables 3-6), for the paper-vs-ours comparison."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reported:
    """A mean and its standard deviation as printed in the paper."""

    mean: float
    sd: float


@dataclass(frozen=True)
class PaperCell:
    """One approach x BTU column of a table: compliance (%) and costs."""

    compliance: tuple[Reported, Reported, Reported]  # real-time, near real-time, relaxed
    resource_cost: Reported
    total_cost: tuple[Reported, Reported, Reported]


def _r(*pairs: float) -> tuple[Reported, ...]:
    return tuple(Reported(pairs[k], pairs[k + 1]) for k in range(0, len(pairs), 2))


def _cell(comp, res, tot) -> PaperCell:
    return PaperCell(_r(*comp), Reported(*res), _r(*tot))


# Threshold compliance is reported once (it does not depend on the BTU); its total cost per BTU.
# Table 4's near real-time BTU30 total cost (155.43) is printed as is, though it is out of line
# with its resource cost and compliance; Table 6's relaxed threshold sigma (75 %) likewise.
TABLES: dict[str, dict[tuple[str, int], PaperCell]] = {
    "stepwise": {
        ("btu", 10): _cell(
            (49, 1, 85, 2, 89, 1), (72.33, 3.79), (158.91, 0.82, 96.85, 0.39, 90.96, 1.84)
        ),
        ("btu", 30): _cell(
            (52, 1, 90, 1, 93, 1), (92.00, 1.73), (173.39, 0.68, 108.24, 0.50, 103.03, 1.04)
        ),
        ("btu", 60): _cell(
            (53, 1, 93, 1, 95, 1), (98.00, 3.84), (174.69, 4.25, 108.88, 3.17, 105.41, 2.91)
        ),
        ("threshold", 10): _cell(
            (40, 1, 67, 1, 71, 1), (58.00, 1.73), (151.83, 1.95, 109.59, 1.77, 102.97, 1.57)
        ),
        ("threshold", 30): _cell(
            (40, 1, 67, 1, 71, 1), (79.00, 4.58), (172.83, 4.93, 130.59, 4.73, 123.97, 4.49)
        ),
        ("threshold", 60): _cell(
            (40, 1, 67, 1, 71, 1), (120.00, 6.00), (213.83, 6.45, 171.59, 6.35, 164.97, 6.12)
        ),
    },
    "two_level": {
        ("btu", 10): _cell(
            (48, 1, 84, 2, 88, 2), (82.33, 5.13), (169.17, 6.83, 108.35, 6.74, 102.37, 6.74)
        ),
        ("btu", 30): _cell(
            (50, 1, 88, 0, 91, 0), (96.00, 7.94), (177.62, 6.82, 155.43, 8.18, 110.62, 8.18)
        ),
        ("btu", 60): _cell(
            (55, 1, 93, 2, 95, 1), (104.00, 6.93), (175.90, 4.77, 114.50, 6.28, 111.73, 6.28)
        ),
        ("threshold", 10): _cell(
            (40, 2, 68, 2, 72, 2), (66.00, 0.00), (157.88, 2.64, 114.62, 3.21, 108.83, 2.40)
        ),
        ("threshold", 30): _cell(
            (40, 2, 68, 2, 72, 2), (86.00, 1.73), (177.88, 4.17, 134.62, 4.19, 128.83, 3.37)
        ),
        ("threshold", 60): _cell(
            (40, 2, 68, 2, 72, 2), (122.00, 3.46), (213.88, 4.16, 170.62, 2.94, 164.83, 2.59)
        ),
    },
    "random_walk_1": {
        ("btu", 10): _cell(
            (49, 1, 85, 2, 89, 2), (69.33, 3.51), (158.19, 4.99, 94.44, 6.14, 88.11, 5.86)
        ),
        ("btu", 30): _cell(
            (52, 2, 90, 3, 93, 2), (95.00, 1.73), (176.94, 4.70, 111.43, 5.65, 106.67, 4.69)
        ),
        ("btu", 60): _cell(
            (54, 0, 93, 0, 95, 1), (110.00, 3.46), (185.95, 3.40, 121.61, 2.89, 117.91, 3.16)
        ),
        ("threshold", 10): _cell(
            (39, 0, 66, 1, 71, 1), (61.33, 1.53), (158.68, 1.54, 115.55, 1.14, 107.54, 1.47)
        ),
        ("threshold", 30): _cell(
            (39, 0, 66, 1, 71, 1), (86.00, 1.73), (183.35, 1.40, 140.22, 1.77, 132.21, 2.14)
        ),
        ("threshold", 60): _cell(
            (39, 0, 66, 1, 71, 1), (128.00, 6.93), (225.35, 6.56, 182.22, 6.88, 174.21, 7.25)
        ),
    },
    "random_walk_2": {
        ("btu", 10): _cell(
            (49, 2, 87, 2, 90, 2), (74.00, 6.08), (172.67, 5.35, 100.17, 6.65, 92.67, 7.15)
        ),
        ("btu", 30): _cell(
            (51, 1, 90, 1, 94, 1), (90.00, 0.00), (184.03, 0.99, 108.91, 2.47, 101.96, 1.61)
        ),
        ("btu", 60): _cell(
            (53, 0, 92, 1, 95, 0), (106.00, 3.46), (195.73, 3.33, 120.59, 3.59, 115.67, 3.48)
        ),
        ("threshold", 10): _cell(
            (41, 1, 70, 1, 75, 75), (59.67, 4.04), (164.18, 3.84, 113.41, 3.47, 104.43, 2.49)
        ),
        ("threshold", 30): _cell(
            (41, 1, 70, 1, 75, 75), (82.00, 9.17), (187.41, 9.88, 135.98, 9.93, 127.19, 8.29)
        ),
        ("threshold", 60): _cell(
            (41, 1, 70, 1, 75, 75), (118.00, 9.17), (223.41, 9.88, 171.98, 9.93, 163.19, 8.29)
        ),
    },
}
