"""Record once, replay with faults: an episode's trace as the cassette that answers its tool and model calls."""

from chaoskit.replay._cassette import ON_MISS, Answer, Cassette, RecordedError, Replay, cassette_path
from chaoskit.replay._model_replies import ModelReply, ReplayMiss, request_key
from chaoskit.replay._replay_episode import CassetteEpisode, episode

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
