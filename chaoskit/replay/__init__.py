"""Record once, replay with faults: an episode's trace as the cassette that answers its tool and model calls."""

from chaoskit.replay._cassette import ON_MISS, Answer, Cassette, RecordedError, Replay, cassette_path
from chaoskit.replay._episode import CassetteEpisode, episode
from chaoskit.replay._models import ModelReply, ReplayMiss, request_key

__all__ = [
    "ON_MISS",
    "Answer",
    "Cassette",
    "CassetteEpisode",
    "ModelReply",
    "RecordedError",
    "Replay",
    "ReplayMiss",
    "cassette_path",
    "episode",
    "request_key",
]
