"""The long-horizon battery: warehouse restocking tasks of 10-30 steps for the ReAct and Reflexion reference agents."""
