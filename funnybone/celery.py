import os

import redis
from celery import Celery, signals
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")


class _Channel(kombu_redis.Channel):
    """A Redis channel that can still reach Redis after its connection was collected.

    With celery 5.7.0 and kombu 5.7.0 a worker that loses Redis while a task is unacknowledged
    exits for good. The consumer first ``collect()``s the broken connection, which detaches the
    transport from it (``transport.client = None``), then ``close()``s it; closing the task
    channel restores the unacknowledged message, and later the finished task is acked on that
    same channel. Both need a new Redis client, whose parameters kombu reads from the detached
    ``transport.client``: ``AttributeError: 'NoneType' object has no attribute 'hostname'`` (or
    ``'client'``), which the consumer does not count as a connection error, so the worker stops
    with "Unrecoverable error" (tests/faults/test_broker_restart.py).

    The channel keeps the parameters of its last client instead. Detached, it reaches the same
    Redis: while Redis is down that is an ordinary connection error, which the consumer already
    ignores (the message stays in Redis's unacked index and is redelivered after the visibility
    timeout); once Redis is back the restore and the late ack succeed as kombu meant them to.
    """

    _remembered_connparams: dict | None = None

    def _connparams(self, asynchronous=False):
        transport = self.connection
        if transport is not None and transport.client is not None:
            params = super()._connparams(asynchronous=asynchronous)
            if not asynchronous:
                self._remembered_connparams = params
            return params
        if self._remembered_connparams is None:
            raise redis.ConnectionError("the broker connection was closed before this channel used it")
        # Plain (not event-loop) parameters: a detached channel only restores and acks, synchronously.
        return dict(self._remembered_connparams)


class RedisTransport(kombu_redis.Transport):
    """kombu's Redis transport with ``_Channel``; used for every redis:// and rediss:// broker URL."""

    Channel = _Channel


for _scheme in ("redis", "rediss"):
    TRANSPORT_ALIASES[_scheme] = f"{__name__}:RedisTransport"

app = Celery("funnybone")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_init.connect
def _tell_tasks_the_pool_size(sender, **kwargs) -> None:
    """How many processes this worker runs tasks in, for its tasks to read (``FUNNYBONE_WORKER_PROCESSES``,
    inherited by the prefork children): a wide judge run shares itself over them (judging.services.runs)."""
    prefork = "prefork" in str(getattr(sender, "pool_cls", ""))
    processes = sender.concurrency if isinstance(sender.concurrency, int) else os.cpu_count() or 1
    os.environ["FUNNYBONE_WORKER_PROCESSES"] = str(processes if prefork else 1)
