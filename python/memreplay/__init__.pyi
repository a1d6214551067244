# The public API, for type checkers (the package loads it lazily at run time: __init__.py).
from ._api import MemreplayWarning as MemreplayWarning
from ._api import advise as advise
from ._api import bound as bound
from ._api import check as check
from ._api import compare as compare
from ._api import export as export
from ._api import fit as fit
from ._api import fits as fits
from ._api import load as load
from ._api import load_plugin as load_plugin
from ._api import parse_bytes as parse_bytes
from ._api import policies as policies
from ._api import replay as replay
from ._api import report as report
from ._core import InputError as InputError
from ._results import Advice as Advice
from ._results import AdviceItem as AdviceItem
from ._results import BoundResult as BoundResult
from ._results import CheckResult as CheckResult
from ._results import Comparison as Comparison
from ._results import FitResult as FitResult
from ._results import ReplayResult as ReplayResult
from ._results import Trace as Trace

__version__: str
__all__: list[str]
