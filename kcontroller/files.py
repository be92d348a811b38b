"""Files the commands write: reports and sweep results whole or not at all, and new event logs.

A new event log (``new-cluster``, ``demo``, ``simulate``) is written beside its directory and
renamed into place once complete (:func:`new_event_log`): a failed or refused command leaves no
log behind, and ``--overwrite`` replaces an existing log only while holding its writer lock, so
it never races a command appending to it.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import tempfile

from events.log import FsyncPolicy, LogError, LogWriter


def write_text_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it, creating its directory: a
    reader never sees half a file, and a failed write leaves the previous one in place."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def holds_files(directory: str) -> bool:
    try:
        return bool(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as e:
        raise LogError(f"cannot read {directory}: {e.strerror}") from None


@contextlib.contextmanager
def new_event_log(log_dir: str, *, overwrite: bool = False):
    """Yield a LogWriter for a new event log that becomes ``log_dir`` when the block completes.

    The log is written in a hidden directory beside ``log_dir``; on success it is renamed into
    place (an existing log, with ``overwrite``, is replaced under its writer lock: refused with
    LogError while another command writes it). On any error the new log is removed and
    ``log_dir`` is left as it was."""
    log_dir = os.fspath(log_dir)
    if os.path.exists(log_dir) and not os.path.isdir(log_dir):
        raise LogError(f"{log_dir} is not a directory")
    if holds_files(log_dir) and not overwrite:
        raise LogError(f"{log_dir} is not empty; pass --overwrite to replace it")
    parent = os.path.dirname(os.path.abspath(log_dir))
    name = os.path.basename(os.path.abspath(log_dir))
    try:
        os.makedirs(parent, exist_ok=True)
        _remove_stale(parent, name)
        tmp = tempfile.mkdtemp(prefix=f".{name}.new-", dir=parent)
    except OSError as e:
        raise LogError(f"cannot create the event log {log_dir}: {e.strerror}") from None
    try:
        with LogWriter(tmp, fsync=FsyncPolicy.per_batch()) as writer:
            yield writer
        _install(tmp, log_dir, parent, name, overwrite)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def _install(tmp: str, log_dir: str, parent: str, name: str, overwrite: bool) -> None:
    """Rename the complete log ``tmp`` to ``log_dir``, replacing what is there under its writer lock."""
    for _ in range(5):
        try:
            fd = os.open(log_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            try:
                os.rename(tmp, log_dir)
            except OSError as e:
                if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    continue  # created meanwhile: go round and lock it
                raise LogError(f"cannot create the event log {log_dir}: {e.strerror}") from None
            _fsync_dir(parent)
            return
        except OSError as e:
            raise LogError(f"cannot open {log_dir}: {e.strerror}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LogError(f"event log {log_dir} is open for writing by another command; "
                               "it was not replaced") from None
            st, held = os.stat(log_dir), os.fstat(fd)
            if (st.st_dev, st.st_ino) != (held.st_dev, held.st_ino):
                continue  # replaced meanwhile: lock the new one
            if os.listdir(log_dir) and not overwrite:
                raise LogError(f"{log_dir} is not empty; pass --overwrite to replace it")
            aside = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
            os.rename(log_dir, aside)
            os.rename(tmp, log_dir)
            _fsync_dir(parent)
            # Still under the lock: a writer that opened the old directory finds it gone, then the new one.
            shutil.rmtree(aside, ignore_errors=True)
            return
        except OSError as e:
            raise LogError(f"cannot replace the event log {log_dir}: {e.strerror}") from None
        finally:
            os.close(fd)
    raise LogError(f"{log_dir} kept changing while it was being replaced; try again")


def _remove_stale(parent: str, name: str) -> None:
    """Remove the temporary directories of earlier commands on ``name`` that were killed (no process holds
    their lock: a command writing one holds it)."""
    for entry in os.listdir(parent):
        if not entry.startswith((f".{name}.new-", f".{name}.old-")):
            continue
        path = os.path.join(parent, entry)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass  # in use
        finally:
            os.close(fd)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
