"""Design search (DESIGN.md section 3 `search`): sweep a declared design space analytically, pick the best
designs under the SLA, the Pareto fronts of cost/latency and value/throughput, and confirm the top
candidates with the simulator."""

from engine.search.pareto import non_dominated
from engine.search.result import Candidate, Confirmation, DesignRow, Front, SearchResult, frames
from engine.search.run import search
from engine.search.space import DesignGrid, SearchError, SearchSpace, expand, parse_space

__all__ = ["Candidate", "Confirmation", "DesignGrid", "DesignRow", "Front", "SearchError", "SearchResult",
           "SearchSpace", "expand", "frames", "non_dominated", "parse_space", "search"]
