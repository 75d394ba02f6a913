"""Planning: Task DAG (later), Deficit-Oriented Expansion and grounding (seed 000)."""
