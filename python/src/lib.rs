//! `kvik._native`: the part of the Python client that touches bytes.
//!
//! A [`Connection`] owns a socket (TCP or Unix), a read buffer and a write
//! buffer. Python hands it whole commands (tuples of arguments); it writes
//! them as RESP with `kvik-protocol`'s writer, waits for the replies with the
//! GIL released, and builds the Python objects straight from the received
//! bytes through `kvik-protocol`'s reply parser ([`PyBuild`]). Decoding goes
//! in two steps, as in the server: `reply_len` first finds where a complete
//! reply ends without building anything, then the reply is built once.
//!
//! What redis-py makes of a reply (its response callbacks) stays in Python;
//! the objects given to it are those of redis-py's own parser: bytes (or
//! str with `decode_responses`) for strings and statuses, int, None, list,
//! and for RESP3 dict, set, float, bool; error replies become the exception
//! redis-py would raise, made by the `error_factory` the Python side passes.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use kvik_protocol::resp::command::{write_argument, write_command_header};
use kvik_protocol::resp::reply_parser::{parse_reply_with, reply_len, ReplyBuilder, ReplyLimits};
use pyo3::exceptions::{PyBaseException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PySet, PyString, PyTuple};

/// The smallest read: many small replies per system call.
const READ_BYTES: usize = 64 * 1024;
/// Requests are written in pieces of about this size, reading what replies
/// came in between, so that a long pipeline never waits on a server that
/// waits on it to read.
const WRITE_CHUNK_BYTES: usize = 256 * 1024;
/// Buffers larger than this after a command go back to this size.
const KEEP_BYTES: usize = 1024 * 1024;

/// redis-py's exception classes, looked up once.
struct Errors {
    connection: PyObject,
    timeout: PyObject,
    data: PyObject,
    invalid_response: PyObject,
}

static ERRORS: GILOnceCell<Errors> = GILOnceCell::new();

fn errors(py: Python<'_>) -> PyResult<&Errors> {
    ERRORS.get_or_try_init(py, || {
        let m = py.import("redis.exceptions")?;
        Ok(Errors {
            connection: m.getattr("ConnectionError")?.unbind(),
            timeout: m.getattr("TimeoutError")?.unbind(),
            data: m.getattr("DataError")?.unbind(),
            invalid_response: m.getattr("InvalidResponse")?.unbind(),
        })
    })
}

fn raise(py: Python<'_>, class: &PyObject, message: String) -> PyErr {
    match class.call1(py, (message,)) {
        Ok(instance) => PyErr::from_value(instance.into_bound(py)),
        Err(e) => e,
    }
}

/// The socket, whichever kind.
enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.set_read_timeout(timeout).and_then(|()| s.set_write_timeout(timeout)),
            Sock::Unix(s) => s.set_read_timeout(timeout).and_then(|()| s.set_write_timeout(timeout)),
        }
    }

    fn try_clone(&self) -> io::Result<Sock> {
        Ok(match self {
            Sock::Tcp(s) => Sock::Tcp(s.try_clone()?),
            Sock::Unix(s) => Sock::Unix(s.try_clone()?),
        })
    }

    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.set_nonblocking(on),
            Sock::Unix(s) => s.set_nonblocking(on),
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Sock::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Sock::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn seconds(value: Option<f64>) -> PyResult<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(PyValueError::new_err(format!("a timeout must be a positive number of seconds, not {s}"))),
    }
}

/// One connection to a server, used by one thread at a time: the Python
/// side's pool hands it from thread to thread, as redis-py's does. A
/// second thread calling while one waits gets PyO3's borrow error, not a
/// mixed-up stream.
#[pyclass(module = "kvik._native")]
pub struct Connection {
    sock: Option<Sock>,
    /// Replies received: `read[start..end]` is not taken yet.
    read: Vec<u8>,
    start: usize,
    end: usize,
    write: Vec<u8>,
    decode: bool,
    limits: ReplyLimits,
    /// The read and write timeout the socket has between polls.
    timeout: Option<Duration>,
    /// Makes the exception for an error reply from its text.
    error_factory: PyObject,
}

/// Why a read or a write stopped.
enum Failure {
    Io(io::Error),
    Closed,
    Protocol(String),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

impl Failure {
    /// The exception redis-py raises for it.
    fn into_err(self, py: Python<'_>, doing: &str) -> PyErr {
        let e = match errors(py) {
            Ok(e) => e,
            Err(err) => return err,
        };
        match self {
            Failure::Io(io) if matches!(io.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                raise(py, &e.timeout, format!("Timeout {doing} socket"))
            }
            Failure::Io(io) => raise(py, &e.connection, format!("Error while {doing} socket: {io}")),
            Failure::Closed => raise(py, &e.connection, "Connection closed by server.".into()),
            Failure::Protocol(msg) => raise(py, &e.invalid_response, msg),
        }
    }
}

/// Builds redis-py's objects for each part of a reply.
struct PyBuild<'py> {
    py: Python<'py>,
    decode: bool,
    error_factory: &'py Bound<'py, PyAny>,
}

impl PyBuild<'_> {
    fn string(&mut self, b: &[u8]) -> PyResult<PyObject> {
        if !self.decode {
            return Ok(PyBytes::new(self.py, b).into_any().unbind());
        }
        match std::str::from_utf8(b) {
            Ok(s) => Ok(PyString::new(self.py, s).into_any().unbind()),
            // Python's own decoder raises its own words for the error.
            Err(_) => Ok(PyBytes::new(self.py, b).call_method1("decode", ("utf-8",))?.unbind()),
        }
    }
}

impl ReplyBuilder for PyBuild<'_> {
    type V = PyResult<PyObject>;

    fn simple(&mut self, s: &[u8]) -> Self::V {
        self.string(s)
    }
    fn error(&mut self, s: &[u8]) -> Self::V {
        Ok(self.error_factory.call1((String::from_utf8_lossy(s),))?.unbind())
    }
    fn integer(&mut self, n: i64) -> Self::V {
        Ok(n.into_pyobject(self.py)?.into_any().unbind())
    }
    fn bulk(&mut self, b: &[u8]) -> Self::V {
        self.string(b)
    }
    fn null(&mut self) -> Self::V {
        Ok(self.py.None())
    }
    fn null_array(&mut self) -> Self::V {
        Ok(self.py.None())
    }
    fn double(&mut self, d: f64) -> Self::V {
        Ok(PyFloat::new(self.py, d).into_any().unbind())
    }
    fn boolean(&mut self, b: bool) -> Self::V {
        Ok(PyBool::new(self.py, b).to_owned().into_any().unbind())
    }
    fn big_number(&mut self, digits: &[u8]) -> Self::V {
        let text = String::from_utf8_lossy(digits);
        Ok(self.py.get_type::<PyInt>().call1((text,))?.unbind())
    }
    fn verbatim(&mut self, _format: [u8; 3], text: &[u8]) -> Self::V {
        self.string(text)
    }
    fn list(&mut self, kind: u8, items: Vec<Self::V>) -> Self::V {
        let items = items.into_iter().collect::<PyResult<Vec<PyObject>>>()?;
        if kind == b'~' {
            // A set of what cannot be hashed stays a list.
            if let Ok(set) = PySet::new(self.py, &items) {
                return Ok(set.into_any().unbind());
            }
        }
        Ok(PyList::new(self.py, items)?.into_any().unbind())
    }
    fn map(&mut self, pairs: Vec<(Self::V, Self::V)>) -> Self::V {
        let dict = PyDict::new(self.py);
        for (k, v) in pairs {
            dict.set_item(k?, v?)?;
        }
        Ok(dict.into_any().unbind())
    }
    fn attribute(&mut self, _attrs: Vec<(Self::V, Self::V)>, value: Self::V) -> Self::V {
        value
    }
}

/// Append one argument as redis-py's encoder would write it: bytes and
/// memoryviews as they are, str as UTF-8, int and float as their `repr`;
/// anything else (bool and None included) is a `DataError`.
fn put_argument(py: Python<'_>, arg: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    if let Ok(b) = arg.downcast::<PyBytes>() {
        write_argument(b.as_bytes(), out);
    } else if let Ok(s) = arg.downcast::<PyString>() {
        write_argument(s.to_cow()?.as_bytes(), out);
    } else if arg.is_instance_of::<PyBool>() {
        return Err(invalid_input(py, arg));
    } else if let Ok(i) = arg.downcast::<PyInt>() {
        match i.extract::<i64>() {
            Ok(n) => write_argument(n.to_string().as_bytes(), out),
            Err(_) => write_argument(i.repr()?.to_cow()?.as_bytes(), out),
        }
    } else if arg.is_instance_of::<PyFloat>() {
        write_argument(arg.repr()?.to_cow()?.as_bytes(), out);
    } else if arg.is_instance_of::<PyMemoryView>() {
        let bytes = arg.call_method0("tobytes")?;
        write_argument(bytes.downcast::<PyBytes>()?.as_bytes(), out);
    } else {
        return Err(invalid_input(py, arg));
    }
    Ok(())
}

fn invalid_input(py: Python<'_>, arg: &Bound<'_, PyAny>) -> PyErr {
    let name = arg.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    match errors(py) {
        Ok(e) => raise(
            py,
            &e.data,
            format!("Invalid input of type: '{name}'. Convert to a bytes, string, int or float first."),
        ),
        Err(err) => err,
    }
}

/// Append a command (a tuple or list of arguments) as a RESP request. A
/// first argument of several words (`"CONFIG GET"`, as redis-py's command
/// methods pass it) goes as that many arguments, as redis-py sends it.
fn put_command(py: Python<'_>, command: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    let at = out.len();
    let written = if let Ok(t) = command.downcast::<PyTuple>() {
        put_arguments(py, t.len(), t.iter(), out)
    } else if let Ok(l) = command.downcast::<PyList>() {
        put_arguments(py, l.len(), l.iter(), out)
    } else {
        Err(PyTypeError::new_err("a command is a tuple or a list of its arguments"))
    };
    if written.is_err() {
        // Nothing of a command that cannot be written goes out.
        out.truncate(at);
    }
    written
}

/// The command's name, split into its words.
fn put_name(name: &[u8], argc: usize, out: &mut Vec<u8>) {
    let words = || name.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
    if name.iter().any(u8::is_ascii_whitespace) {
        write_command_header(argc - 1 + words().count(), out);
        words().for_each(|w| write_argument(w, out));
    } else {
        write_command_header(argc, out);
        write_argument(name, out);
    }
}

fn put_arguments<'py>(
    py: Python<'py>,
    argc: usize,
    mut args: impl Iterator<Item = Bound<'py, PyAny>>,
    out: &mut Vec<u8>,
) -> PyResult<()> {
    let Some(first) = args.next() else {
        return Err(PyValueError::new_err("a command needs at least its name"));
    };
    if let Ok(b) = first.downcast::<PyBytes>() {
        put_name(b.as_bytes(), argc, out);
    } else if let Ok(s) = first.downcast::<PyString>() {
        put_name(s.to_cow()?.as_bytes(), argc, out);
    } else {
        write_command_header(argc, out);
        put_argument(py, &first, out)?;
    }
    args.try_for_each(|a| put_argument(py, &a, out))
}

#[pymethods]
impl Connection {
    /// Connect to `host`:`port`, or to the Unix socket at `path`.
    #[new]
    // The keyword arguments of the Python constructor, one each.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (host=None, port=6379, path=None, connect_timeout=None, socket_timeout=None, decode=false, error_factory=None))]
    fn new(
        py: Python<'_>,
        host: Option<String>,
        port: u16,
        path: Option<String>,
        connect_timeout: Option<f64>,
        socket_timeout: Option<f64>,
        decode: bool,
        error_factory: Option<PyObject>,
    ) -> PyResult<Self> {
        let connect_timeout = seconds(connect_timeout)?.or(seconds(socket_timeout)?);
        let socket_timeout = seconds(socket_timeout)?;
        let error_factory = error_factory.ok_or_else(|| PyTypeError::new_err("error_factory is required"))?;
        let connected = py.allow_threads(|| -> io::Result<Sock> {
            let sock = match &path {
                Some(p) => Sock::Unix(UnixStream::connect(p)?),
                None => {
                    let host = host.as_deref().unwrap_or("localhost");
                    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} has no address"));
                    let mut found = None;
                    for addr in (host, port).to_socket_addrs()? {
                        let tried = match connect_timeout {
                            Some(t) => TcpStream::connect_timeout(&addr, t),
                            None => TcpStream::connect(addr),
                        };
                        match tried {
                            Ok(s) => {
                                found = Some(s);
                                break;
                            }
                            Err(e) => last = e,
                        }
                    }
                    let s = found.ok_or(last)?;
                    s.set_nodelay(true)?;
                    Sock::Tcp(s)
                }
            };
            sock.set_timeout(socket_timeout)?;
            Ok(sock)
        });
        let sock = match connected {
            Ok(s) => s,
            Err(e) => {
                let target = match &path {
                    Some(p) => p.clone(),
                    None => format!("{}:{port}", host.as_deref().unwrap_or("localhost")),
                };
                let e_py = errors(py)?;
                let class = if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) {
                    &e_py.timeout
                } else {
                    &e_py.connection
                };
                return Err(raise(py, class, format!("Error connecting to {target}. {e}.")));
            }
        };
        Ok(Connection {
            sock: Some(sock),
            read: vec![0; READ_BYTES],
            start: 0,
            end: 0,
            write: Vec::with_capacity(READ_BYTES),
            decode,
            limits: ReplyLimits::DEFAULT,
            timeout: socket_timeout,
            error_factory,
        })
    }

    /// Run one command and return its reply; an error reply is raised.
    fn call(&mut self, py: Python<'_>, command: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        self.write.clear();
        put_command(py, command, &mut self.write)?;
        self.flush(py)?;
        let reply = self.next_reply(py)?;
        if reply.bind(py).is_instance_of::<PyBaseException>() {
            return Err(PyErr::from_value(reply.into_bound(py)));
        }
        Ok(reply)
    }

    /// Run every command of `commands` (an iterable of argument tuples)
    /// in one go; the replies in order, error replies as exception objects.
    fn call_many(&mut self, py: Python<'_>, commands: &Bound<'_, PyAny>) -> PyResult<Py<PyList>> {
        self.write.clear();
        let mut count = 0usize;
        for command in commands.try_iter()? {
            put_command(py, &command?, &mut self.write)?;
            count += 1;
        }
        self.flush(py)?;
        let replies = PyList::empty(py);
        for _ in 0..count {
            replies.append(self.next_reply(py)?)?;
        }
        Ok(replies.unbind())
    }

    /// Send every command of `commands`, `window` at a time, as fast as the
    /// socket takes them, counting the replies without building them
    /// (`redis-cli --pipe`). Returns the number of replies and the error
    /// replies, as exception objects (at most `max_errors` kept).
    #[pyo3(signature = (commands, window=1000, max_errors=100))]
    fn bulk(
        &mut self,
        py: Python<'_>,
        commands: &Bound<'_, PyAny>,
        window: usize,
        max_errors: usize,
    ) -> PyResult<(u64, Py<PyList>)> {
        let window = window.max(1);
        let errors_seen = PyList::empty(py);
        let (mut sent, mut replied) = (0u64, 0u64);
        let mut iter = commands.try_iter()?;
        loop {
            self.write.clear();
            let mut in_window = 0;
            for command in iter.by_ref() {
                put_command(py, &command?, &mut self.write)?;
                in_window += 1;
                if in_window == window {
                    break;
                }
            }
            if in_window == 0 {
                break;
            }
            sent += in_window as u64;
            self.flush(py)?;
            // Keep one window in flight: take the replies of all but it.
            let keep = if in_window == window { window as u64 } else { 0 };
            while replied + keep < sent {
                replied += self.skip_reply(py, &errors_seen, max_errors)?;
            }
        }
        while replied < sent {
            replied += self.skip_reply(py, &errors_seen, max_errors)?;
        }
        Ok((replied, errors_seen.unbind()))
    }

    /// Send one command without waiting for its reply.
    fn send(&mut self, py: Python<'_>, command: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write.clear();
        put_command(py, command, &mut self.write)?;
        self.flush(py)
    }

    /// The next reply, pushes included (pub/sub), error replies as
    /// exception objects.
    fn read_reply(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        self.next_any(py, false)
    }

    /// Decode strings to str (`decode_responses`) or not.
    fn set_decode(&mut self, decode: bool) {
        self.decode = decode;
    }

    /// The read and write timeout in seconds (None: wait for ever).
    #[pyo3(signature = (timeout=None))]
    fn set_timeout(&mut self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let timeout = seconds(timeout)?;
        if let Some(sock) = &self.sock {
            sock.set_timeout(timeout).map_err(|e| Failure::Io(e).into_err(py, "setting the timeout of the"))?;
        }
        self.timeout = timeout;
        Ok(())
    }

    /// The next reply (pushes included) if one comes within `timeout`
    /// seconds (0: only one already received), else None; the connection
    /// stays usable either way, as a pub/sub connection's wait for a
    /// message must.
    fn poll_reply(&mut self, py: Python<'_>, timeout: f64) -> PyResult<Option<PyObject>> {
        let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        loop {
            match reply_len(&self.read[self.start..self.end], &self.limits) {
                Ok(Some(_)) => return self.next_any(py, false).map(Some),
                Ok(None) => {}
                Err(e) => return Err(self.broken(py, Failure::Protocol(e.to_string()), "reading from")),
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let waited = self.fill_within(py, left);
            match waited {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(f) => return Err(self.broken(py, f, "reading from")),
            }
        }
    }

    /// Whether a reply is already received and waiting.
    fn has_reply(&self) -> bool {
        matches!(reply_len(&self.read[self.start..self.end], &self.limits), Ok(Some(_)))
    }

    /// A writer of commands on this connection's socket that other threads
    /// may use while this one waits for replies (a pub/sub connection:
    /// one thread listens, another subscribes).
    fn sender(&self, py: Python<'_>) -> PyResult<Sender> {
        let sock = self.sock.as_ref().ok_or_else(|| Failure::Closed.into_err(py, "writing to"))?;
        let sock = sock.try_clone().map_err(|e| Failure::Io(e).into_err(py, "writing to"))?;
        Ok(Sender { sock: Some(sock), write: Vec::new() })
    }

    /// Close the socket; later calls raise `ConnectionError`.
    fn close(&mut self) {
        if let Some(sock) = self.sock.take() {
            sock.shutdown();
        }
        self.start = 0;
        self.end = 0;
    }

    #[getter]
    fn closed(&self) -> bool {
        self.sock.is_none()
    }
}

impl Connection {
    fn sock(&mut self) -> Result<&mut Sock, Failure> {
        self.sock.as_mut().ok_or(Failure::Closed)
    }

    /// Write the write buffer whole, in pieces, reading the replies that
    /// come meanwhile into the read buffer (with the GIL released).
    fn flush(&mut self, py: Python<'_>) -> PyResult<()> {
        let written = self.write_all(py);
        if self.write.capacity() > KEEP_BYTES {
            self.write = Vec::with_capacity(READ_BYTES);
        } else {
            self.write.clear();
        }
        written.map_err(|f| self.broken(py, f, "writing to"))
    }

    fn write_all(&mut self, py: Python<'_>) -> Result<(), Failure> {
        let total = self.write.len();
        let mut at = 0;
        while at < total {
            let upto = (at + WRITE_CHUNK_BYTES).min(total);
            let chunk_more = upto < total;
            let Connection { sock, write, .. } = self;
            let sock = sock.as_mut().ok_or(Failure::Closed)?;
            py.allow_threads(|| sock.write_all(&write[at..upto]))?;
            at = upto;
            if chunk_more {
                self.take_available(py)?;
            }
        }
        Ok(())
    }

    /// Read what has arrived, without waiting.
    fn take_available(&mut self, py: Python<'_>) -> Result<(), Failure> {
        self.sock()?.set_nonblocking(true)?;
        let outcome = loop {
            match self.fill(py) {
                Ok(()) => continue,
                Err(Failure::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
                Err(f) => break Err(f),
            }
        };
        self.sock()?.set_nonblocking(false)?;
        outcome
    }

    /// Read once more into the read buffer, making room first.
    fn fill(&mut self, py: Python<'_>) -> Result<(), Failure> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.read.len() - self.end < READ_BYTES / 4 {
            if self.start > 0 {
                self.read.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.read.len() - self.end < READ_BYTES / 4 {
                let limit = self.limits.max_bulk_len.saturating_add(READ_BYTES);
                if self.read.len() >= limit {
                    return Err(Failure::Protocol("a reply larger than the client accepts".into()));
                }
                let grown = (self.read.len() * 2).min(limit);
                self.read.resize(grown, 0);
            }
        }
        let Connection { sock, read, end, .. } = self;
        let sock = sock.as_mut().ok_or(Failure::Closed)?;
        let n = py.allow_threads(|| sock.read(&mut read[*end..]))?;
        if n == 0 {
            return Err(Failure::Closed);
        }
        self.end += n;
        Ok(())
    }

    /// Read once, waiting at most `left` (not at all when zero). Whether
    /// anything came; the socket's own timeout is put back after.
    fn fill_within(&mut self, py: Python<'_>, left: Duration) -> Result<bool, Failure> {
        let sock = self.sock()?;
        if left.is_zero() {
            sock.set_nonblocking(true)?;
        } else {
            sock.set_timeout(Some(left))?;
        }
        let filled = self.fill(py);
        let timeout = self.timeout;
        let sock = self.sock()?;
        if left.is_zero() {
            sock.set_nonblocking(false)?;
        } else {
            sock.set_timeout(timeout)?;
        }
        match filled {
            Ok(()) => Ok(true),
            Err(Failure::Io(e)) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => Ok(false),
            Err(f) => Err(f),
        }
    }

    /// The length of the complete reply at the start of the read buffer,
    /// reading until it is there.
    fn complete(&mut self, py: Python<'_>) -> Result<usize, Failure> {
        loop {
            match reply_len(&self.read[self.start..self.end], &self.limits) {
                Ok(Some(n)) => return Ok(n),
                Ok(None) => self.fill(py)?,
                Err(e) => return Err(Failure::Protocol(e.to_string())),
            }
        }
    }

    /// The next reply as Python objects; with `skip_pushes`, pushes are
    /// passed over (they are not replies to commands).
    fn next_any(&mut self, py: Python<'_>, skip_pushes: bool) -> PyResult<PyObject> {
        loop {
            let n = self.complete(py).map_err(|f| self.broken(py, f, "reading from"))?;
            let bytes = &self.read[self.start..self.start + n];
            if skip_pushes && bytes[0] == b'>' {
                self.start += n;
                continue;
            }
            let factory = self.error_factory.bind(py);
            let mut build = PyBuild { py, decode: self.decode, error_factory: factory };
            let built = parse_reply_with(bytes, &self.limits, &mut build);
            self.start += n;
            return match built {
                Ok(Some((value, _))) => value,
                Ok(None) => Err(self.broken(py, Failure::Protocol("a reply ended early".into()), "reading from")),
                Err(e) => Err(self.broken(py, Failure::Protocol(e.to_string()), "reading from")),
            };
        }
    }

    fn next_reply(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        self.next_any(py, true)
    }

    /// Take the next reply without building it, unless it is an error
    /// (kept in `errors` while there are fewer than `max`). Returns 1, or
    /// 0 for a push.
    fn skip_reply(&mut self, py: Python<'_>, errors: &Bound<'_, PyList>, max: usize) -> PyResult<u64> {
        let n = self.complete(py).map_err(|f| self.broken(py, f, "reading from"))?;
        match self.read[self.start] {
            b'>' => {
                self.start += n;
                Ok(0)
            }
            b'-' | b'!' => {
                let error = self.next_reply(py)?;
                if errors.len() < max {
                    errors.append(error)?;
                }
                Ok(1)
            }
            _ => {
                self.start += n;
                Ok(1)
            }
        }
    }

    /// After a failure the connection is unusable: where the next reply
    /// starts is unknown. Close it and give the exception to raise.
    fn broken(&mut self, py: Python<'_>, failure: Failure, doing: &str) -> PyErr {
        self.close();
        failure.into_err(py, doing)
    }
}

/// See [`Connection::sender`].
#[pyclass(module = "kvik._native")]
pub struct Sender {
    sock: Option<Sock>,
    write: Vec<u8>,
}

#[pymethods]
impl Sender {
    /// Send one command; its reply goes to the connection's reader.
    fn send(&mut self, py: Python<'_>, command: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write.clear();
        put_command(py, command, &mut self.write)?;
        let Sender { sock, write } = self;
        let Some(sock) = sock.as_mut() else { return Err(Failure::Closed.into_err(py, "writing to")) };
        let sent = py.allow_threads(|| sock.write_all(write));
        sent.map_err(|e| {
            self.sock = None;
            Failure::Io(e).into_err(py, "writing to")
        })
    }
}

/// The RESP request for `command` (a tuple or list of arguments): what
/// `Connection.call` sends. For building commands ahead of time, and tests.
#[pyfunction]
fn encode_command<'py>(py: Python<'py>, command: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    put_command(py, command, &mut out)?;
    Ok(PyBytes::new(py, &out))
}

/// Every reply in `data`, as a connection would return them (error
/// replies as exception objects, pushes included); the bytes must end at
/// the end of a reply. For tests against the shared vectors.
#[pyfunction]
#[pyo3(signature = (data, error_factory, decode=false))]
fn parse_replies(py: Python<'_>, data: &[u8], error_factory: PyObject, decode: bool) -> PyResult<Py<PyList>> {
    let limits = ReplyLimits::DEFAULT;
    let factory = error_factory.bind(py);
    let replies = PyList::empty(py);
    let mut at = 0;
    while at < data.len() {
        let rest = &data[at..];
        let invalid = |msg: String| errors(py).map_or_else(|e| e, |e| raise(py, &e.invalid_response, msg));
        match reply_len(rest, &limits) {
            Ok(Some(n)) => {
                let mut build = PyBuild { py, decode, error_factory: factory };
                match parse_reply_with(&rest[..n], &limits, &mut build) {
                    Ok(Some((value, _))) => replies.append(value?)?,
                    Ok(None) => return Err(invalid("a reply ended early".into())),
                    Err(e) => return Err(invalid(e.to_string())),
                }
                at += n;
            }
            Ok(None) => return Err(invalid("the data ends inside a reply".into())),
            Err(e) => return Err(invalid(e.to_string())),
        }
    }
    Ok(replies.unbind())
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Connection>()?;
    m.add_class::<Sender>()?;
    m.add_function(wrap_pyfunction!(encode_command, m)?)?;
    m.add_function(wrap_pyfunction!(parse_replies, m)?)?;
    Ok(())
}
