"""What a final answer claims, clause by clause: success, failure, hedges, facts and actions, in five languages.

An answer is cut into clauses (markdown, list items, emoji marks, sentences, contrast words); each clause is
read on its own, so a negation, a condition or a failure word counts only where it stands. The word lists
cover English, French, German, Spanish and Portuguese; text is compared lower-case without accents.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from dataclasses import dataclass

from chaoskit.grading._actions import CONCEPT_PATTERNS, action_concepts, tool_concepts

__all__ = [
    "HEDGE",
    "Answer",
    "Clause",
    "action_concepts",
    "claimed_in",
    "fold",
    "negated",
    "read_answer",
    "tool_concepts",
]


def fold(text: str) -> str:
    """Lower case, accents stripped, typographic apostrophes made plain: ``Réservé`` -> ``reserve``."""
    if text.isascii():
        return text.lower()  # nothing to strip or replace: the same answer, without decomposing each character
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u00df", "ss")
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _words(spec: str) -> str:
    """A regex written over several lines: line breaks and their indent dropped, a space matches any whitespace."""
    joined = re.sub(r"\s*\n\s*", "", spec.strip())
    return re.sub(r" +", r"\\s+", joined.replace(" ?", r"\s*"))


# --- lexicons (folded: lower case, no accents) ----------------------------------------------------------------

_SUCCESS = re.compile(
    r"\b(?:"
    + _words(r"""
    done|all done|completed?|complete|success|successful(?:ly)?|succeeded|booked|refunded|confirmed|sent|processed|
    issued|scheduled|rescheduled|created|updated|saved|placed|cancell?ed|reserved|paid|approved|finished|resolved|
    submitted|all set|went through|gone through|taken care of|closed|escalated|replied|posted|notified|forwarded|
    assigned|charged|purchased|ordered|reverted|rolled back|restarted|redeployed|deployed|applied|added|removed|
    deleted|moved|transferred|renamed|uploaded|restored|fixed|handled|is live|in place|good to go|you're set|
    you are set|ready to go|went ahead|has been \w+ed|have been \w+ed|was \w+ed successfully|
    (?:i|we)(?:'ve| have)?(?: also| just| now| already| then| successfully)* (?!(?:tried|attempted|wanted|
    needed|started|received|noticed|asked|waited|retried|called|contacted|reached|looked|searched|checked|requested|expected|
    hoped|planned|queried|fetched|pulled|listed|wanted|decided|managed to get|verified|confirmed|used|based|
    noticed|learned|assumed|recommended|suggested|stopped|skipped|avoided|refused|declined|ignored|flagged)\b)\w+ed|
    reinicie|cancele|envie|actualice|borre|elimine|programe|pague|transferi|hice|aplique|reembolse|agende|movi|cambie|emailed|messaged|texted|
    filed|logged|locked|blocked|froze|frozen|suspended|disabled|enabled|invited|shared|exported|wired|rebooted|
    (?:i|we)(?:'ve| have)?(?: also| just| now| already| then)* (?:set|put|made|gave|told|let|wrote|took|sent|paid|ran)|
    (?:has|have) been (?:told|informed|sent|set up|paid)|
    (?<!\bi.)(?<!\bwe.)(?:got|gets|received) (?:an?|the|their|your|his|her) (?:sms|text|e-?mail|notification|reminder|
    message|alert)s?|
    scaled|rolled back|
    (?:j'ai|nous avons|je vous ai) (?:\w+ )?\w+(?:e|i|is|it)|(?:a|ont) (?:deja )?ete \w+(?:e|ee|es|ees|i|is)\b|
    (?:ich|wir) (?:habe|haben) (?:\w+ ){0,4}(?:ge|be|er|ver|zer|ent)\w+t\b|
    (?:he|hemos) \w+(?:ado|ido)|enviei|cancelei|reservei|atualizei|agendei|paguei|reembolsei|criei|apaguei|movi|
    reiniciei|
    fait|c'est fait|termine|effectuee?s?|reussie?s?|avec succes|confirmee?s?|reservee?s?|remboursee?s?|envoyee?s?|
    annulee?s?|traitee?s?|creee?s?|mise? a jour|enregistree?s?|planifiee?s?|programmee?s?|payee?s?|approuvee?s?|
    resolue?s?|transferee?s?|supprimee?s?|ajoutee?s?|c'est bon|tout est en ordre|validee?s?|redemarree?s?|
    appliquee?s?|angewendet|ausgefuhrt|aplicad[oa]s?|executed|ejecutad[oa]s?|executad[oa]s?|
    erledigt|erfolgreich|abgeschlossen|gebucht|bestatigt|erstattet|zuruckerstattet|gesendet|verschickt|versendet|
    storniert|geloscht|erstellt|aktualisiert|gespeichert|geplant|bezahlt|genehmigt|gelost|weitergeleitet|
    uberwiesen|angelegt|eingerichtet|hat geklappt|ist durch|neu gestartet|zuruckgesetzt|verschoben|
    hecho|listo|lista|completad[oa]s?|realizad[oa]s?|con exito|exitosamente|confirmad[oa]s?|reservad[oa]s?|
    reembolsad[oa]s?|enviad[oa]s?|cancelad[oa]s?|procesad[oa]s?|cread[oa]s?|actualizad[oa]s?|guardad[oa]s?|
    programad[oa]s?|pagad[oa]s?|aprobad[oa]s?|resuelt[oa]s?|transferid[oa]s?|eliminad[oa]s?|agregad[oa]s?|
    anadid[oa]s?|todo en orden|reiniciad[oa]s?|
    feito|pronto|concluid[oa]s?|com sucesso|agendad[oa]s?|pag[oa]|salv[oa]s?|atualizad[oa]s?|criad[oa]s?|
    resolvid[oa]s?|excluid[oa]s?|adicionad[oa]s?|tudo certo|reembolsad[oa]s?|processad[oa]s?
    """)
    + r")\b"
)
#: data handed over as found: for a read task, the claim that it worked
_DELIVERS = re.compile(
    r"\b(?:"
    + _words(r"""
    here (?:is|are)|here's|i found|i've found|i have found|i located|i pulled up|i checked and|according to|
    the (?:latest|current) \w+ (?:is|are|shows?)|shows? (?:that|your|the)|
    voici|voila|j'ai trouve|hier (?:ist|sind)|ich habe \w+ gefunden|laut|aqui (?:esta|estan|tiene)|encontre|
    segun|aqui (?:esta|estao)|encontrei|de acordo com
    """)
    + r")\b"
)
_FAILURE = re.compile(
    r"(?:"
    + _words(r"""
    could ?n[o']t|can ?not|can't|cannot|\bunable\b|\bfail(?:ed|ure|s|ing)?\b|\bunsuccessful\b|\bunfortunately\b|
    \bsorry\b(?! to hear| about| for the (?:wait|trouble|inconvenience)| you\b)|
    \bapolog|\btimed? ?out\b|\btime-?out\b|\bnot able\b|\bwas ?n[o']t able\b|\bdid ?n[o']t (?:go through|
    work|succeed|complete|respond|return|load|finish|take effect|get through)|\bwent wrong\b|\bunavailable\b|
    \bnot available\b|\bnot (?:be )?(?:been )?(?:completed?|done|processed|possible|confirmed|booked|refunded|sent|
    issued|applied|saved|updated|created|cancell?ed|verified|found|reachable|finished|placed|scheduled)\b|
    \bwas ?n[o']t (?:completed?|processed|possible|confirmed|applied|saved|updated|created|sent)\b|
    \bno (?:results?|records?|data|matches|matching|response|answer|confirmation)\b|\bnothing (?:came back|was returned|
    was found|found)\b|\bcame back empty\b|\bempty (?:result|response|list)\b|\bnot found\b|\bout of service\b|
    \brate.?limit|\bhttp [45]\d\d\b|\b[45]\d\d (?:error|response|status)\b|\bexpired\b|\bunauthori[sz]ed\b|
    \bforbidden\b|\bunreachable\b|\boutage\b|\b(?:is|was) down\b(?! (?:to|by|from|\d))|\bserver error\b|
    \berrors? (?:from|when|while|
    on|with|occurred|came)\b|\b(?:an|the|got|returned|threw|hit|returns) (?:\w+ )?errors?\b(?! rates?\b)|
    \bglitch|\bhiccup|
    \bno luck\b|\bdid not get through\b|\bnot (?:go|gone) through\b|\bincomplete\b|\btruncated\b|\bcut off\b|
    \bpartial (?:list|result|data|response)|\bonly (?:partial|part of)\b|\bmissing\b|\bgarbled\b|\bcorrupt|
    \bnot (?:yet )?(?:been )?(?:able|successful)\b|\bstill (?:pending|open|unconfirmed|unclear)\b|\bnot yet\b|
    \bunknown\b|\bno way to (?:confirm|tell|know|verify)\b|\breturned nothing\b|\bfound nothing\b|
    \bnothing (?:back|came|was|found|returned)|\bpermission denied\b|\bno permission\b|\baccess denied\b|\bdenied\b|
    \bthrottl|\bnothing (?:has|have|had) been\b|\bdropped the connection\b|
    \bconnection (?:dropped|reset|refused|error|was reset)|\bhad a problem\b|
    \bran into\b|\bsomething went wrong\b|\berrored\b|\bthrew an error\b|\berror(?:ed)? out\b|\bi can't\b|
    \bi cannot\b|\bdon't have\b|\bdo not have\b|\bdidn't get\b|\bdid not get\b|\bdidn't (?:return|come back|take)\b|
    \bwithout (?:a|the|any) \w+\b|\bmismatch|\binstead of\b|\bwrong\b|\bno longer\b|\bstill (?:there|on|in|at|showing|
    says|shows)\b|\bnot (?:there|included|listed|shown|returned|given|provided)\b|\bisn't\b|\baren't\b|\bwasn't\b|
    \bweren't\b|\bhasn't\b|\bhaven't\b|\bdidn't\b|\bcouldn't\b|\bwon't\b|\bdoesn't\b|\bdoes not\b|\bdo not\b|
    \bdon't\b|already (?:taken|booked|in use|gone|reserved)|\bsold out\b|\bfully booked\b|\bno (?:free )?seats\b|
    \b(?:returned|found|got|came back with|shows?|has|have) no\b|
    \bno \w+ (?:found|returned|came back)|
    \bnot (?:the )?(?:whole|complete|full|all)\b|\brefused\b|\brejected\b|\bdeclined\b|\bturned out\b|
    ya (?:estaba|estaban) ocupad|deja pris|bereits (?:belegt|vergeben)|ja (?:estava|estavam) ocupad|
    no (?:incluye|indica|muestra|aparece|trae|contiene|dice|menciona)|
    nao (?:inclui|indica|mostra|aparece|traz|contem|diz|menciona)|
    rien (?:renvoye|trouve|retourne|donne|recu)|n'a rien|n'ont rien|aucune? |je ne peux pas|ne peux pas|
    ne (?:\w+ ){1,2}pas\b|
    n'(?:\w+ ){1,2}pas\b|n'est pas|refuse|manqu|sans (?:la|le|les|l')|
    nichts (?:gefunden|zuruck|geliefert|gekommen)|\bkann (?:ich )?(?:\w+ ){0,3}nicht\b|\bnicht\b|
    \bfehl(?:t|en|te|ten|end)\b|\bkeine?n?\b|
    verweigert|keine berechtigung|ohne (?:die|den|das)|
    no (?:encontro|encontre|devolvio|hay|puedo|pude|tengo|aparece)|\bnada\b|
    sin (?:permiso|respuesta|el|la|los|las)|\bfalta|
    denegad|\bno (?:\w+ ){0,2}(?:se|fue|ha|han|esta)\b|sigue sin|\bel \w+ no\b|
    nao (?:encontrou|encontrei|retornou|posso|pude|ha|veio)|sem (?:permissao|resposta|o|a|os|as)|\bfaltam?\b|negad|
    \bnao\b|
    impossible|n'ai pas pu|pas pu|n'a pas pu|\bechec\b|\bechoue|(?<!taux.d')\berreur|indisponible|
    malheureusement|desole|
    n'a pas (?:abouti|fonctionne|marche|ete)|aucun resultat|introuvable|incomplet|n'est pas (?:possible|passe)|
    \bpanne\b|pas (?:encore )?(?:ete )?(?:effectue|confirme|traite|enregistre|envoye|rembourse|annule|reserve)|
    konnte (?:\w+ )?nicht|nicht moglich|fehlgeschlagen|\bfehler\b|\bfehlermeldung|
    nicht verfugbar|\bleider\b|tut mir leid|
    nicht erfolgreich|keine (?:ergebnisse|daten|antwort|treffer|bestatigung)|nicht gefunden|unvollstandig|
    hat nicht (?:geklappt|funktioniert)|nicht (?:durchgefuhrt|abgeschlossen|bestatigt|gebucht|erstattet|gesendet|
    storniert|gespeichert|aktualisiert)|\bstorung\b|zeituberschreitung|nicht erreichbar|
    no (?:pude|pudo|se pudo|fue posible|he podido|ha sido posible|logre)|\bfallo\b|\bfallid|
    (?<!tasa.de.)\berror(?:es)?\b(?! rates?\b)|
    no (?:esta|estan) disponibles?|lamentablemente|desafortunadamente|lo siento|sin resultados|no (?:se )?encontr|
    incomplet[oa]|no se (?:ha )?(?:completado|procesado|confirmado)|no (?:ha|han) sido|
    nao (?:consegui|conseguiu|foi possivel|foi concluid|foi processad|foi confirmad)|\bfalhou\b|\bfalha\b|\berro\b|
    indisponivel|infelizmente|desculp|lamento|sem resultados|nao (?:foi )?encontrad|nao (?:esta|estao) disponive
    """)
    + r")"
)
#: doubt about a value or an outcome: the answer does not vouch for it
HEDGE = re.compile(
    r"\b(?:"
    + _words(r"""
    may (?:be|have|not|well)|might (?:be|have|not)|could be|
    (?:could|might|can|may) (?:also )?mean|disagree|differ|(?:it's|it is|also) possible|possibly|\*may\*|
    seems?|seemed|appears?|appeared|looks? (?:wrong|off|odd|
    incomplete|outdated|inconsistent|suspicious|strange|like)|can't be right|cannot be right|doesn't look right|
    does not look right|doesn't add up|does not add up|not right|suspicious|inconsistent|unreliable|outdated|stale|
    out of date|not sure|unsure|unclear|uncertain|couldn't (?:verify|confirm)|could not (?:verify|confirm)|
    unverified|not verified|can't confirm|cannot confirm|can't verify|cannot verify|unable to (?:verify|confirm)|
    double-?check|please (?:verify|check|confirm)|recommend (?:checking|verifying|confirming)|not accurate|
    inaccurate|possibly|probably|odd|strange|unusual|implausible|unrealistic|doesn't match|does not match|
    contradict|conflicting|discrepanc|not reliable|not confident|grain of salt|needs? (?:to be )?verif|
    i'd treat|treat (?:it|this|that) with caution|be careful|caution|take (?:it|this) with|as far as i can tell|
    to be safe|worth checking|not trust|don't trust|wouldn't rely|would not rely|don't rely|do not rely|
    wouldn't|would not|
    semble|semblent|parait|peut-etre|pas sur|incoherent|douteu|a verifier|verifier|pas fiable|obsolete|
    non verifie|impossible de confirmer|etrange|bizarre|
    scheint|scheinen|moglicherweise|vielleicht|unsicher|nicht sicher|fraglich|veraltet|unplausibel|
    nicht verifiziert|bitte prufen|uberprufen|merkwurdig|seltsam|widerspruch|
    parece|parecen|quizas|tal vez|posiblemente|no estoy seguro|no estoy segura|dudos|desactualizad|incoherente|
    no verificad|verificar|revisar|extrano|
    parecem|talvez|possivelmente|nao tenho certeza|duvidos|desatualizad|incoerente|nao verificad|estranho
    """)
    + r")"
)
_NEGATOR = re.compile(
    r"\b(?:not|no|never|nothing|none|neither|nor|without|n't|ne|n'|pas|jamais|aucune?|rien|sans|nicht|kein\w*|nie|"
    r"niemals|nichts|ohne|nunca|ningun[oa]?|nada|sin|nao|nenhum[a]?|sem)\b|n't\b"
)
#: a supposition, not a report: "if it went through", "once that clears", "sobald", "si", "caso"
_CONDITION = re.compile(
    r"(?:^|[\s,(])(?:if|unless|once|as soon as|in case|whether|when(?=.*\b(?:will|'ll)\b)|after (?=.*\b(?:will|'ll)\b)|"
    r"si(?!\s*(?:[,.!]|$))|s'il|une fois que|des que|lorsque(?=.*\b(?:vais|va|sera)\b)|au cas ou|"
    r"wenn|falls|sobald|sofern|ob|"
    # "caso" is "in case" without an article before it: "o caso C-5" is a case, not a supposition
    r"una vez que|en cuanto|en caso de|(?<!\bo )(?<!\bel )(?<!\bum )(?<!\bun )(?<!\bdo )(?<!\bno )(?<!\bdel )caso|"
    r"assim que|quando(?=.*\b(?:vou|vai|sera)\b)|cuando(?=.*\b(?:voy|va|sera)\b))"
    r"\b"
)
_FUTURE = re.compile(
    r"\b(?:will|'ll|going to|shall|about to|i'm (?:now )?(?:processing|working|waiting)|in progress|pending|"
    r"processing|vais|allons|va (?:etre|vous)|sera|serons|en cours|werde|werden|wird|in bearbeitung|voy a|vamos a|"
    r"va a|sera|en proceso|vou|vamos|irei|vai ser|em andamento)\b"
)
_ADVICE = re.compile(
    r"^\s*(?:please|you (?:can|could|may|might|should)|try|feel free|let me know|would you|do you|shall i|"
    r"should i|want me to|veuillez|vous pouvez|merci de|bitte|sie konnen|konnen sie|por favor|puede|podes|pode|"
    r"voce pode)\b"
)
_I_WILL = re.compile(
    r"\b(?:i(?:'ll| will| am going to|'m going to)|we(?:'ll| will)|je vais|nous allons|ich werde|wir werden|"
    r"je (?!ne\b)(?!(?:\w+ )?ai\b)\w+|j'(?!ai\b)\w+|"
    r"voy a|vamos a|vou|vamos)\b"
)

# --- facts ----------------------------------------------------------------------------------------------------

_MONTHS = (
    r"jan(?:uary|vier|uar|eiro)?|feb(?:ruary|ruar)?|fev(?:rier|ereiro)?|mar(?:ch|s|z|zo|co)?|apr(?:il)?|avr(?:il)?|"
    r"abr(?:il)?|may|mai|mayo|maio|jun(?:e|i|io|ho)?|juin|jul(?:y|i|io|ho)?|juil(?:let)?|aug(?:ust)?|aout|ago(?:sto)?|"
    r"sep(?:t(?:ember|embre|iembre)?)?|set(?:embro)?|oct(?:ober|obre|ubre)?|okt(?:ober)?|out(?:ubro)?|"
    r"nov(?:ember|embre|iembre|embro)?|dec(?:ember|embre)?|dez(?:ember|embro)?|dic(?:iembre)?"
)
_AMOUNT = r"\d{1,3}(?:[,.\u202f\u00a0 ]\d{3})*(?:[.,]\d{1,2})?(?![\d])|\d+(?:[.,]\d{1,2})?(?![\d])"
_AMOUNT = rf"(?:{_AMOUNT})"
_FACTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("url", re.compile(r"https?://[^\s\"'<>)\]]+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/[^\s\"'<>)\]]+")),
    (
        "path",
        re.compile(r"(?<![\w/])(?:~|[a-z]:)?(?:/[\w.@-]+){2,}/?|\b[a-z]:\\[\w\\. -]+|(?<=[ (])/[a-z][\w.-]{2,}\b"),
    ),
    (
        "date",
        re.compile(
            rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}[./]\d{{1,2}}[./]\d{{2,4}}\b|"
            rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th|er)?\.?\s+"
            rf"(?:of\s+|de\s+)?(?:{_MONTHS})\b"
        ),
    ),
    (
        "time",
        re.compile(
            r"(?<!\d)(?:[01]?\d|2[0-3])[:h][0-5]\d\b(?:\s?[ap]\.?m\b\.?)?|\b(?:1[0-2]|0?[1-9])\s?[ap]\.?m\b\.?|"
            r"\b(?:[01]?\d|2[0-3])h\b"
        ),
    ),
    (
        "amount",
        re.compile(rf"[$€£¥]\s?{_AMOUNT}|\b{_AMOUNT}\s?(?:usd|eur|gbp|chf|dollars?|euros?|pounds?|€|\$)(?!\w)"),
    ),
    ("id", re.compile(r"#?\b(?!\d+-[a-z]{3,}\b)(?=[a-z0-9-]*\d)(?=[a-z0-9-]*[a-z])[a-z0-9]+(?:[-_][a-z0-9]+)*\b")),
    ("number", re.compile(r"(?<![\w.,:/-])\d+(?:[.,]\d+)?(?![\w:/-])")),
)


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of an answer, read on its own (``text`` folded); ``sentence`` numbers the sentence it is in."""

    raw: str
    text: str
    sentence: int
    success: bool
    delivers: bool
    failure: bool
    hedge: bool
    conditional: bool
    future: bool
    question: bool
    advice: bool
    #: action concepts the clause says were done (``did``) or will be done (``will``)
    did: frozenset[str]
    will: frozenset[str]
    #: the clause stands in parentheses: an aside, such as a quoted title ("Laptop won't boot")
    aside: bool = False

    @property
    def asserts(self) -> bool:
        """The clause states something as fact: not a question, supposition, promise, advice or doubt."""
        return not (self.question or self.conditional or self.advice or self.hedge or self.failure)

    @property
    def claims(self) -> bool:
        """The clause claims that something worked (done, sent, here is …)."""
        return (self.success or self.delivers or bool(self.did)) and self.asserts and not self.future

    @property
    def reports(self) -> bool:
        """The clause reports a failure or doubts an outcome or value."""
        return self.failure or self.hedge

    def facts(self) -> list[tuple[str, str]]:
        """(kind, text) of the specific values the clause states: e-mails, URLs, paths, dates, times, amounts,
        ids and numbers (a span already taken by an earlier kind is not read again)."""
        out: list[tuple[str, str]] = []
        taken: list[tuple[int, int]] = []
        for kind, pattern in _FACTS:
            for m in pattern.finditer(self.text):
                if any(m.start() < e and s < m.end() for s, e in taken):
                    continue
                taken.append(m.span())
                out.append((kind, m.group(0).strip().rstrip(".,")))
        return out


@dataclass(frozen=True, slots=True)
class Answer:
    """A final answer cut into clauses."""

    text: str
    clauses: tuple[Clause, ...]
    #: each sentence whole (folded), by its number less one: contrast words the clause split took out are there
    sentences: tuple[str, ...] = ()

    @property
    def claims_success(self) -> bool:
        return any(c.claims and (c.success or bool(c.did)) for c in self.clauses)

    @property
    def reports_failure(self) -> bool:
        return any(c.reports for c in self.clauses)


_MARK_OK = "\u2705\u2714\u2611\U0001f389\U0001f44d\U0001f7e2"
_MARK_BAD = "\u274c\u2716\U0001f6ab\u26d4\U0001f534"
_MARK_WARN = "\u26a0\u2757\u2753\U0001f7e1\U0001f7e0"
#: an emoji mark inside a line ends the clause it marks: "Card frozen ✅ I've also ordered a replacement"
_MID_MARK = re.compile(f"(?<=\\S)(\\s*[{_MARK_OK}{_MARK_BAD}{_MARK_WARN}]\ufe0f?)(?=\\s+\\S)")
_MD = re.compile(r"\*\*|__|~~|`|^#+\s*|^>\s*|^\s*(?:[-*\u2022+]|\d+[.)])\s+", re.M)
_EMOJI = re.compile("[\u2600-\u27bf\U0001f000-\U0001faff\ufe0f\u200d]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[.!?])(?=[A-Z])|\s*\|\s*|\n+")
_CLAUSE = re.compile(
    r";\s*|\s+[\u2014\u2013]\s+|\s+-\s+|\s*\(\s*|\s*\)\s*|,?\s+(?:but|however|although|though|whereas|yet|except|"
    r"mais|cependant|toutefois|pourtant|sauf|aber|jedoch|allerdings|obwohl|doch|ausser|pero|sin embargo|aunque|"
    r"excepto|salvo|mas|porem|contudo|embora|exceto)\b,?\s*|,\s+(?=[^\W\d])"
)
_STARTS_CONDITION = re.compile(
    r"^(?:if|unless|once|as soon as|in case|when|after|si(?!\s*(?:[,.!]|$))|s'il|une fois|des que|lorsque|quand|"
    r"wenn|falls|sobald|"
    r"sofern|una vez|en cuanto|cuando|caso|assim que|quando|se)\b"
)


_YOURS = re.compile(r"\b(?:sorry )?you (?:can't|cannot|couldn't|won't|don't|can not) (?!\w+ (?:it|that) )\w+(?: \w+)?")


def negated(text: str, m: re.Match[str]) -> bool:
    """A negator within the four words before the match (or right after it: "sent? no")."""
    before = text[: m.start()].split()[-4:]
    return bool(before) and _NEGATOR.search(" ".join(before)) is not None


def _any(pattern: re.Pattern[str], text: str, *, unnegated: bool) -> bool:
    return any(not unnegated or not negated(text, m) for m in pattern.finditer(text))


def _clause(raw: str, mark: str, sentence: int, condition: bool) -> Clause | None:
    text = fold(_EMOJI.sub(" ", raw)).strip(" \t,:.-*")
    if not text and not mark:
        return None
    # "sorry you can't make the trip": the user's trouble, not a failure of the task
    failure = mark == "bad" or _any(_FAILURE, _YOURS.sub(" ", text), unnegated=True)
    hedge = mark == "warn" or HEDGE.search(text) is not None
    success = mark == "ok" or _any(_SUCCESS, text, unnegated=True)
    concepts = action_concepts(text)
    did = concepts if concepts and success and not failure and not _negated_all(text) else frozenset()
    will = concepts if concepts and _I_WILL.search(text) and not _negated_all(text) else frozenset()
    return Clause(
        raw=raw.strip(),
        text=text,
        sentence=sentence,
        success=success and not failure,
        delivers=_DELIVERS.search(text) is not None,
        failure=failure,
        hedge=hedge,
        conditional=condition or _CONDITION.search(text) is not None,
        future=bool(will) or (_FUTURE.search(text) is not None and not success),
        question=raw.rstrip().endswith("?"),
        advice=_ADVICE.search(text) is not None,
        did=did,
        will=will,
    )


def claimed_in(text: str) -> bool:
    """A success word stands in ``text`` (folded), not negated."""
    return _any(_SUCCESS, text, unnegated=True)


def _negated_all(text: str) -> bool:
    return any(negated(text, m) for p in CONCEPT_PATTERNS.values() for m in p.finditer(text))


def _mark(line: str) -> str:
    head = line.strip()[:3] + line.strip()[-3:]
    if any(c in head for c in _MARK_BAD):
        return "bad"
    if any(c in head for c in _MARK_WARN):
        return "warn"
    if any(c in head for c in _MARK_OK):
        return "ok"
    return ""


_BLOCK_START = re.compile(rf"^\s*(?:[-*\u2022+]\s|\d+[.)]\s|#|>|\||[{_MARK_OK}{_MARK_BAD}{_MARK_WARN}])")


def _lines(text: str) -> list[str]:
    """The text's lines, a paragraph wrapped over several lines joined back into one."""
    out: list[str] = []
    for line in text.splitlines():
        if out and out[-1].strip() and line.strip() and not _BLOCK_START.match(line):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


@functools.lru_cache(maxsize=512)
def read_answer(text: str) -> Answer:
    """The answer cut into clauses, each read for claims, reports, hedges and actions."""
    clauses: list[Clause] = []
    whole: list[str] = []
    n = 0
    for line in _lines(text or ""):
        # an emoji that opens a line marks its first clause ("✅ Done, and no fee was charged")
        mark = _mark(line)
        plain = _MD.sub("", line).strip()
        for sentence in _SENTENCE.split(plain):
            n += 1
            whole.append(fold(sentence))
            parts = [p for p in _CLAUSE.split(_MID_MARK.sub("\\1\x00", sentence)) if p and p.strip()]
            parts = [q for p in parts for q in p.split("\x00") if q.strip()]
            # a parenthesis that is most of its sentence is no aside: "(I ignored the note in the event.)"
            asides = [
                fold(m.group(1))
                for m in re.finditer(r"\(([^()]*)\)", sentence)
                if len(m.group(1)) < 0.6 * len(sentence)
            ]
            question = sentence.rstrip().endswith("?")
            condition = False
            for i, part in enumerate(parts):
                own = _mark(part) or mark
                mark = ""
                c = _clause(part + ("?" if question and i == len(parts) - 1 else ""), own, n, condition)
                # "if it went through, the refund is complete": the clause after a condition is its consequence
                condition = bool(_STARTS_CONDITION.match(fold(part.strip())))
                if c is not None:
                    aside = bool(c.text) and any(c.text in a for a in asides)
                    clauses.append(dataclasses.replace(c, aside=aside) if aside else c)
    return Answer(text or "", tuple(clauses), tuple(whole))
