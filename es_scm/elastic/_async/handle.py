"""What a searcher and the index it searches share: the client, the model check, the encoder.

:class:`AsyncIndexHandle` (→ ``IndexHandle``, generated) is one index name on one cluster as es-scm
reaches it: the client (:func:`~es_scm.elastic._async.opensearch.es_surface`) and its engine
(:mod:`es_scm.engines`); the model check of the indices behind the name
(:class:`~es_scm.search.target.TargetCheck`: made once, made again when an answer says the name
moved) and the cluster's clause limit (learned once); and the sentence encoder of the index's
dense vectors, loaded once and checked against the identity the index records. An
:class:`~es_scm.elastic.SCMIndex` and its ``searcher`` hold the same handle, so that what one
learns the other knows: the index's creation is the searcher's model check, and both encode
with the one encoder.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import AsyncElasticsearch

from es_scm.elastic._async.client import cluster_max_clauses
from es_scm.elastic._async.opensearch import es_surface
from es_scm.elastic.concurrency import async_compute
from es_scm.encoder import SentenceEncoder
from es_scm.engines import engine_of
from es_scm.index.dense import check_encoder, loaded
from es_scm.index.schema import ModelMismatchError
from es_scm.options import DenseOptions
from es_scm.search.results import Target
from es_scm.search.target import Checked, TargetCheck

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["AsyncIndexHandle"]


class AsyncIndexHandle:
    """One index, alias or pattern of one cluster, as es-scm reaches it (the module docstring).

    Parameters
    ----------
    client : AsyncElasticsearch
        An official client, or an opensearch-py one (wrapped).
    name : str
        The index, alias or pattern (checked by the caller).
    model : SoftCosineModel, or an iterable of them
        The model (or models) the indices may be built with (:class:`TargetCheck`).
    clause_limit : int, optional
        The most clauses a query may have; None: the cluster's, learned once.
    encoder : SentenceEncoder, optional
        The encoder of the index's dense vectors; None: the one the index records, loaded once.
    """

    def __init__(
        self,
        client: AsyncElasticsearch,
        name: str,
        model: SoftCosineModel | Iterable[SoftCosineModel],
        clause_limit: int | None = None,
        encoder: SentenceEncoder | None = None,
    ) -> None:
        self.client = es_surface(client)
        #: What the cluster's engine does its own way (:mod:`es_scm.engines`).
        self.engine = engine_of(self.client)
        self.target = TargetCheck(name, model, clause_limit)
        self.encoder: SentenceEncoder | None = encoder
        self._encoder_checked: str | None = None  # the weights self.encoder was checked against

    @property
    def name(self) -> str:
        """The index, alias or pattern."""
        return self.target.name

    # -- the model check --------------------------------------------------------------------------

    async def get_index(self) -> Any:
        """The get-index answer of the name (404 when nothing has it)."""
        return await self.client.options(ignore_status=404).indices.get(index=self.name)

    async def ready(self) -> Checked:
        """The model checked (once) and the clause limit known (once)."""
        checked = self.target.checked
        if checked is None:
            _, checked = self.target.accept(await self.get_index())
        if self.target.clause_limit is None:
            self.target.clause_limit = await cluster_max_clauses(self.client)
        return checked

    async def fields_known(self, checked: Checked, requests: Sequence[Any]) -> Checked:
        """``checked``, once every field that the requests' filters name is known to be mapped
        (:class:`~es_scm.search.filters.MappedFields`, from the model check's answer: no
        request). A field that it lacks is looked up once more, since fields may have been
        mapped since the check.

        Raises
        ------
        UnknownFieldError
            A filter names a field that no index behind the name maps: it would match nothing.
        """
        filters = [r.filters for r in requests if getattr(r, "filters", ())]
        if not any(checked.fields.unknown(clauses) for clauses in filters):
            return checked
        _, checked = self.target.accept(await self.get_index())
        for clauses in filters:
            checked.fields.check(self.name, clauses)
        return checked

    async def recheck(self, seen: Target, total: int | None) -> bool:
        """An answer did not come from ``seen``, or named no index: check the model again;
        whether the name still stands for the same indices."""
        self.target.forget()  # until checked again (another thread then checks too)
        try:
            _, now = self.target.accept(await self.get_index())
        except ModelMismatchError as error:
            raise self.target.moved(error) from error
        return self.target.still(seen, now, total)

    # -- the encoder of the index's dense vectors ------------------------------------------------

    async def index_encoder(self, checked: Checked) -> SentenceEncoder:
        """The encoder of the index's dense vectors: the one given, else the one ``_meta``
        names, loaded once; its identity checked against the index's record (once per record).

        Raises
        ------
        ValueError
            The index holds no dense vectors of es-scm's.
        EncoderMismatchError
            The encoder's weights are not those that encoded the index.
        """
        meta = checked.encoder
        if meta is None:
            raise ValueError(
                f"{self.name!r} holds no dense vectors of es-scm's (an index created with "
                "dense=...); for a dense_vector field of your own give "
                "dense=DenseQuery(field, vector)"
            )
        weights = meta.get("identity", {}).get("weights")
        if self.encoder is not None and self._encoder_checked == weights:
            return self.encoder
        encoder = self.encoder or SentenceEncoder(str(meta["encoder"]))
        _, identity = await async_compute(loaded, encoder)
        check_encoder(self.name, meta, identity, encoder.name)
        self.encoder, self._encoder_checked = encoder, weights
        return encoder

    async def new_encoder(self, options: DenseOptions) -> tuple[SentenceEncoder, int, dict]:
        """The encoder of a new index's dense vectors (``options.encoder``; the handle's own
        if it has that name), loaded: with its dimension and identity."""
        if self.encoder is not None and self.encoder.name == options.encoder:
            encoder = self.encoder
        else:
            encoder = SentenceEncoder(options.encoder)
        dims, identity = await async_compute(loaded, encoder)
        self.encoder, self._encoder_checked = encoder, identity.get("weights")
        return encoder, dims, identity
