"""Kinds of action (send, refund, cancel, book, …): the stems of their verbs in five languages, and a tool's kind."""

from __future__ import annotations

import functools
import re

__all__ = ["CONCEPT_PATTERNS", "action_concepts", "tool_concepts"]

#: action concepts: stems of their verbs in the five languages (folded), and of the words tools are named with
_CONCEPTS: dict[str, str] = {
    "send": r"\b(?:send|sent|forward|e-?mailed|mailed|messaged|notif|envoy|transmi|gesendet|geschickt|schick|"
    r"weitergeleitet|weiterleit|benachrichtig|enviad|envie|reenvi|encaminh|notifiq|repl(?:y|ied)|repond|antwort|posted|"
    r"texted|ping|sms|text message|told|informed|inform[eé]|let (?:\w+ ){1,3}know|avise|avisei|mande|mandei|"
    r"(?:got|gets|received) (?:an?|the|their|your|his|her) (?:e-?mail|text|message|notification|reminder|alert))",
    "refund": r"\b(?:refund|reimburs|rembours|erstatt|zuruckerstatt|ruckerstatt|reembols)",
    "cancel": r"\b(?:cancel|annul|storn)",
    "book": r"\b(?:book|reserv|gebucht|buch)",
    "pay": r"\b(?:pay|paid|charg|wire|wired|paye|bezahl|zahl|uberwies|pag[oa]d|pague|pagou|pagamento)",
    "transfer": r"\b(?:transfer|uberwies|virement|vire)",
    "delete": r"\b(?:delet|remov|purg|supprim|effac|losch|geloscht|entfern|elimin|borr|exclu|apag)",
    "update": r"\b(?:updat|chang|modif|ander|geandert|aktualis|actualiz|atualiz|cambi|alter|mis a jour|edit|bump|"
    r"raised|switch)",
    "create": r"\b(?:creat|filed|logged|opened|cree|erstell|angelegt|cread|criad|set (?:it )?up)",
    "schedule": r"\b(?:schedul|reschedul|planif|program|agend|standing order)",
    "invite": r"\b(?:invit|einlad|eingeladen|convid)",
    "hold": r"\b(?:hold|freez|frozen|froze|block|lock|suspend|bloqu|sperr|gesperrt|congel|suspen|gele)",
    "restart": r"\b(?:restart|reboot|redemarr|neu ?gestartet|neustart|reinici|scale|scaled)",
    "deploy": r"\b(?:deploy|roll(?:ed)? ?back|revert|rollback|restor|restaur|wiederhergestellt|zuruckgesetzt|retabl)",
    "approve": r"\b(?:approv|genehmig|aprob|aprov)",
    "run": r"\b(?:(?:ran|run) (?:the|a|this|that) (?:\w+ )?(?:script|command|patch|fix|job)|execut|apply|applied|"
    r"appliqu|angewendet|ausgefuhrt|aplicad|ejecut|install|patch)",
    "verify": r"\b(?:verif|validat)",
    "assign": r"\b(?:assign|escalat|zugewiesen|eskal|escal|asign|atribu|route)",
    "close": r"\b(?:clos|resolv|ferm|resolu|geschlossen|gelost|cerr|resuelt|fech)",
    "share": r"\b(?:shar|upload|partag|geteilt|hochgeladen|compart|export)",
    # "place order" is a tool's name (place_order, placeOrder): it does what "I placed 3 purchase orders" says
    "order": r"\b(?:ordered|purchas|placed (?:an|the|your) order|place orders?\b|commandee?s?\b|bestellt|comprad|"
    r"encomendad)",
    "move": r"\b(?:mov|deplac|verschob|verschieb)",
    "add": r"\b(?:add|ajout|hinzugefugt|agreg|anad|adicion)",
    "restock": r"\b(?:restock|put (?:\w+ ){0,3}back (?:in|into|on)|back (?:in|into) (?:stock|inventory)|"
    r"returned to (?:stock|inventory)|remis (?:\w+ ){0,3}en stock|wieder eingelagert|reponi|de vuelta al inventario|"
    r"devolvi\w* al inventario|devolvid\w* ao estoque)",
}
CONCEPT_PATTERNS = {name: re.compile(stems) for name, stems in _CONCEPTS.items()}


def action_concepts(text: str) -> frozenset[str]:
    """The action concepts whose verb stems occur in ``text`` (folded)."""
    return frozenset(name for name, pattern in CONCEPT_PATTERNS.items() if pattern.search(text))


@functools.lru_cache(maxsize=1024)
def tool_concepts(tool: str) -> frozenset[str]:
    """The action concepts of a tool's name: ``issue_refund`` -> refund, ``send_email`` -> send."""
    words = " ".join(re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", tool)).lower()
    return action_concepts(" " + words + " ")
