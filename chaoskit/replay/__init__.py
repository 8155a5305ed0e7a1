"""Record once, replay with faults: an episode's trace as the cassette that answers its tool calls."""

from chaoskit.replay._cassette import ON_MISS, Answer, Cassette, RecordedError, Replay, ReplayMiss, cassette_path
from chaoskit.replay._replay_episode import CassetteEpisode, episode

__all__ = [
    "ON_MISS",
    "Answer",
    "Cassette",
    "CassetteEpisode",
    "RecordedError",
    "Replay",
    "ReplayMiss",
    "cassette_path",
    "episode",
]
