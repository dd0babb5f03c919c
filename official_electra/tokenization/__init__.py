"""The project's one tokenizer (BERT-exact WordPiece) and input packing."""

from official_electra.tokenization.input_packing import pack_segments
from official_electra.tokenization.vocabulary import load_vocabulary
from official_electra.tokenization.vocabulary import SPECIAL_TOKENS
from official_electra.tokenization.vocabulary import Vocabulary
from official_electra.tokenization.vocabulary import VocabularyError
from official_electra.tokenization.wordpiece_tokenizer import WordpieceTokenizer
