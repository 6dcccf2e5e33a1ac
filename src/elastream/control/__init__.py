"""Control: the pure policies, the guard layer, the plan and the MAPE loop over an engine."""
