import ChildProcess
import Dispatch
import Foundation
import GStreamer
import LecternCore
import Logging
import Synchronization

/// Reads media files (GStreamer's discoverer: duration, tags, cover, chapters; the MP4 module: an MP4 file's series)
/// in a child process, `lecternd --media-reader`, as GStreamer scans its plugins in `gst-plugin-scanner`: a file that
/// crashes or hangs a demuxer costs an error for that file, not the daemon. (The daemon's memory is the same either
/// way: the discoverer loads the plugins the playbin loads; docs/decisions/media-reader.md.)
///
/// One child at a time: started by the first read, kept for the reads that follow (an import reads hundreds of
/// files), asked to leave after `idleTime` without one or after `readsPerChild` files. A request and its reply are
/// one message each (``MediaReaderWire``), over a socket pair that is the child's standard input. Reads run one after another on
/// the reader's own queue, never on the D-Bus thread, the player actor or the cooperative pool. When the child
/// cannot be started at all, files are read in this process, as before, and the log says why (each read tries to
/// start one again).
public final class MediaReader: Sendable {
    /// The argument that makes `lecternd` a media reader.
    public static let argument = "--media-reader"
    /// Exit statuses of a child that is not a reader of this protocol (see ``read(_:)``).
    static let notAReader: Set<Int32> = [3, 64, 126, 127]
    /// The most address space a reader may map, in bytes.
    static let addressSpaceLimit: rlim_t = 2 << 30

    /// The longest the discoverer may take over one file; the child gets `answerGrace` more to answer.
    let timeout: Duration
    let answerGrace: Duration
    let idleTime: Duration
    /// Files a child reads before it is asked to leave (the next read starts another): what its discoverer keeps
    /// from file to file (a fraction of a kB each) never adds up over a collection of 100,000 files.
    let readsPerChild: Int
    /// nil: files are read in this process, on the reader's queue (`--media-reader-program none`).
    private let program: String?
    private let logger: Logger
    private let queue = DispatchQueue(label: "lectern.media-reader", qos: .utility)
    private let state = Mutex(State())

    private struct State {
        var child: Child?
        /// Counts reads, so that an idle timer knows whether a read came after it was set.
        var reads: UInt64 = 0
        /// How many children were started (for tests).
        var started = 0
        /// Whether the log already says that no child could be started (each read tries again).
        var saidCannotStart = false
    }

    private struct Child {
        var pid: pid_t
        var socket: Int32
        /// Replies it has sent.
        var served = 0
    }

    /// - Parameter program: the executable to start with ``argument``: lecternd itself; nil: read in this process.
    public init(program: String?, timeout: Duration = .seconds(5), answerGrace: Duration = .seconds(5),
                idleTime: Duration = .seconds(5), readsPerChild: Int = 5_000, logger: Logger) {
        self.program = program
        self.timeout = timeout
        self.answerGrace = answerGrace
        self.idleTime = idleTime
        self.readsPerChild = max(1, readsPerChild)
        self.logger = logger
    }

    /// lecternd itself, for ``init(program:timeout:answerGrace:idleTime:logger:)``: the path of the running binary
    /// (so the child is `lecternd` in ps, and valgrind runs it for what it is, where exec'ing `/proc/self/exe`
    /// would start valgrind's own launcher), or `/proc/self/exe` when that file is gone. When an upgrade put
    /// another binary at that path, a child that does not speak this protocol exits at its first request and the
    /// daemon reads files itself (see ``read(_:)``).
    public static var ownExecutable: String {
        let fallback = "/proc/self/exe"
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: fallback),
              !path.hasSuffix(" (deleted)"), access(path, X_OK) == 0 else { return fallback }
        return path
    }

    /// The child's process id while one runs (for tests).
    var processID: pid_t? { state.withLock { $0.child?.pid } }
    /// How many children were started so far (for tests).
    var childrenStarted: Int { state.withLock { $0.started } }

    /// What the discoverer finds in `url`, read by the child.
    /// - Throws: ``MediaError``, as ``Discoverer/discover(_:timeout:)`` does; `.failed` when the child crashed on
    ///   the file, did not answer within the timeout and its grace, or answered nonsense (and was stopped).
    public func read(_ url: URL) async throws(MediaError) -> MediaInfo {
        let result: Result<MediaInfo, MediaError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(MediaError) in try self.readNow(url) })
            }
        }
        return try result.get()
    }

    /// The loudness of `urls`, decoded one after another as one programme, measured by the child (EBU R128).
    /// - Throws: ``MediaError/failed(_:)``: a file that cannot be decoded or holds no sound, `timeout` passed, or the
    ///   child crashed (and was stopped).
    public func measureLoudness(_ urls: [URL], timeout: Duration) async throws(MediaError) -> LoudnessMeasurement {
        let result: Result<LoudnessMeasurement, MediaError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(MediaError) in try self.measureNow(urls, timeout: timeout) })
            }
        }
        return try result.get()
    }

    /// Stops the child, if one runs (after the read under way, if any), and waits for it to go.
    public func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                if let child = state.withLock({ state in defer { state.child = nil }; return state.child }) {
                    _ = end(child, kill: false)
                }
                continuation.resume()
            }
        }
    }

    // MARK: The daemon's side (on `queue`)

    private func readNow(_ url: URL) throws(MediaError) -> MediaInfo {
        let name = url.isFileURL ? url.path(percentEncoded: false) : url.absoluteString
        let request = MediaReaderWire.Request(uri: url.absoluteString, timeoutMilliseconds: Int64(timeout.seconds * 1000))
        let reply = try exchange(request, about: name, within: timeout + answerGrace) { () throws(MediaError) in
            var info = try Discoverer.discover(url, timeout: timeout)
            info.readMP4Series(of: url)
            return .info(info)
        }
        guard case .info(let info) = reply else { throw .failed("\(name): the media reader answered nonsense") }
        return info
    }

    private func measureNow(_ urls: [URL], timeout: Duration) throws(MediaError) -> LoudnessMeasurement {
        let request = MediaReaderWire.Request(kind: .loudness, uris: urls.map(\.absoluteString),
                                              timeoutMilliseconds: Int64(timeout.seconds * 1000))
        let reply = try exchange(request, about: "the loudness of \(urls.count) files", within: timeout + answerGrace) {
            () throws(MediaError) in .loudness(try Loudness.measure(urls, timeout: timeout))
        }
        guard case .loudness(let measured) = reply else { throw .failed("the media reader answered nonsense") }
        return measured
    }

    /// Sends `request` to the child and returns its answer (an error it answered is thrown); `inProcess` answers it
    /// when no child can be started. `name` says what is read, in errors and the log.
    private func exchange(_ request: MediaReaderWire.Request, about name: String, within limit: Duration, again: Bool = false,
                          inProcess: () throws(MediaError) -> MediaReaderWire.Reply) throws(MediaError) -> MediaReaderWire.Reply {
        defer { if !again { leaveWhenIdle() } }
        guard var child = running() else { return try inProcess() }
        let message = MediaReaderWire.encode(request)
        if !Self.sendAll(message, to: child.socket) {
            // It went after running() looked (between two reads): once more, with a new one.
            let ending = describeExit(forget(child, kill: true))
            guard let another = running() else { return try inProcess() }
            guard Self.sendAll(message, to: another.socket) else {
                throw .failed("\(name): the media reader went away (\(ending))")
            }
            child = another
        }
        switch Self.receiveMessage(from: child.socket, within: limit) {
        case .message(let payload):
            guard let reply = MediaReaderWire.decodeReply(payload) else {
                throw .failed("\(name): the media reader answered nonsense (\(describeExit(forget(child, kill: true))))")
            }
            let served = state.withLock { state -> Int in
                if state.child?.pid == child.pid { state.child?.served += 1 }
                return state.child?.served ?? 0
            }
            if served >= readsPerChild { _ = forget(child, kill: false) }
            if case .error(let error) = reply { throw error }
            return reply
        case .nonsense:
            throw .failed("\(name): the media reader answered nonsense (\(describeExit(forget(child, kill: true))))")
        case .closed:
            let status = forget(child, kill: false)
            // Killed (SIGKILL) after it had served a read: the kernel's OOM killer or a user, before this request or
            // while the child was still going (a killed process with threads is reaped only once they all are: until
            // then it looks alive). Not this file's doing: once more, with a new child.
            if !again, child.served > 0, let status, status & 0x7f == SIGKILL {
                logger.notice("the media reader was killed; reading the file again with another", metadata: ["path": "\(name)"])
                return try exchange(request, about: name, within: limit, again: true, inProcess: inProcess)
            }
            let ending = describeExit(status)
            if child.served == 0, let status, status & 0x7f == 0, Self.notAReader.contains(status >> 8 & 0xff) {
                // It exited at its first request as a program that is not a reader of this protocol does: another
                // lecternd at our path after an upgrade (3: another protocol; 64: no --media-reader option), or a
                // wrong --media-reader-program (126, 127: the shell's "cannot run"). Not the file's fault. Any other
                // ending (a crash, another status) is the file's, and the daemon never reads that file itself.
                logger.warning("the media reader exited at its first request; reading this file in the daemon",
                               metadata: ["program": "\(program ?? "")", "how": "\(ending)"])
                return try inProcess()
            }
            logger.warning("the media reader stopped while reading a file", metadata: ["path": "\(name)", "how": "\(ending)"])
            throw .failed("\(name): the media reader stopped while reading it (\(ending))")
        case .timedOut:
            let ending = describeExit(forget(child, kill: true))
            logger.warning("the media reader did not answer; stopped it", metadata: ["path": "\(name)", "how": "\(ending)"])
            throw .failed("\(name): the media reader did not answer within \(limit.seconds) s")
        }
    }

    /// The child to send to: the one running, else a new one; nil when there is no program or none can be started
    /// (read in-process then).
    private func running() -> Child? {
        if let current = state.withLock({ $0.child }) {
            var status: Int32 = 0
            if waitpid(current.pid, &status, WNOHANG) == 0 { return current }
            // It went between two reads (killed by someone, out of memory): reaped; start another.
            close(current.socket)
            logger.notice("the media reader had stopped; starting another", metadata: ["how": "\(describeExit(status))"])
            state.withLock { $0.child = nil }
        }
        guard let program else { return nil }
        do {
            let child = try spawn(program)
            state.withLock { state in
                state.child = child
                state.started += 1
                state.saidCannotStart = false
            }
            logger.info("started the media reader", metadata: ["pid": "\(child.pid)"])
            return child
        } catch {
            if !state.withLock({ state in defer { state.saidCannotStart = true }; return state.saidCannotStart }) {
                logger.warning("cannot start the media reader; reading media files in the daemon",
                               metadata: ["program": "\(program)", "error": "\(error)"])
            }
            return nil
        }
    }

    /// Ends `child` and forgets it; its wait status (nil if it was reaped elsewhere).
    private func forget(_ child: Child, kill: Bool) -> Int32? {
        state.withLock { if $0.child?.pid == child.pid { $0.child = nil } }
        return end(child, kill: kill)
    }

    /// Closes the socket (a waiting child reads its end and exits), kills it if asked or if it lingers, reaps it.
    private func end(_ child: Child, kill: Bool) -> Int32? {
        close(child.socket)
        if kill { _ = Glibc.kill(child.pid, SIGKILL) }
        var status: Int32 = 0
        for _ in 0..<200 {  // 2 s for a child that was asked to leave
            let reaped = waitpid(child.pid, &status, WNOHANG)
            if reaped == child.pid { return status }
            if reaped < 0 && errno != EINTR { return nil }
            usleep(10_000)
        }
        _ = Glibc.kill(child.pid, SIGKILL)
        while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    /// After `idleTime` without a read, the child is asked to leave.
    private func leaveWhenIdle() {
        let reads = state.withLock { state in
            state.reads &+= 1
            return state.reads
        }
        let nanoseconds = Int(idleTime.components.seconds) * 1_000_000_000 + Int(idleTime.components.attoseconds / 1_000_000_000)
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
            let idle = state.withLock { state -> Child? in
                guard state.reads == reads, let child = state.child else { return nil }
                state.child = nil
                return child
            }
            if let idle { _ = end(idle, kill: false) }
        }
    }

    private func spawn(_ program: String) throws -> Child {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw MediaError.failed("socketpair: \(String(cString: strerror(errno)))")
        }
        defer { close(pair[1]) }
        switch spawnChild(program, arguments: [Self.argument], descriptors: [(pair[1], 0)]) {
        case .success(let pid):
            return Child(pid: pid, socket: pair[0])
        case .failure(let error):
            close(pair[0])
            throw MediaError.failed(error.description)
        }
    }

    // MARK: Messages over the socket

    private static func sendAll(_ bytes: [UInt8], to socket: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var sent = 0
            while sent < buffer.count {
                let count = send(socket, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                sent += count
            }
            return true
        }
    }

    private enum Received {
        case message([UInt8])
        /// A length beyond ``MediaReaderWire/largestMessage``.
        case nonsense
        case closed
        case timedOut
    }

    /// One message (its length, then its bytes), waiting at most `limit` (nil: as long as it takes).
    private static func receiveMessage(from socket: Int32, within limit: Duration?) -> Received {
        let deadline = limit.map { ContinuousClock.now + $0 }
        var buffer: [UInt8] = []
        var wanted = 4  // the length first, then the message
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if buffer.count == wanted {
                if wanted > 4 { return .message(Array(buffer[4...])) }
                let length = buffer.reversed().reduce(0) { $0 << 8 | Int($1) }  // little-endian
                guard length <= MediaReaderWire.largestMessage else { return .nonsense }
                if length == 0 { return .message([]) }
                wanted += length
                continue
            }
            if let deadline {
                let left = deadline - .now
                guard left > .zero else { return .timedOut }
                var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, Int32(min(left.seconds * 1000 + 1, 60_000)))
                if ready < 0 && errno == EINTR { continue }
                if ready < 0 { return .closed }
                guard ready > 0 else { continue }  // the deadline decides
            }
            let count = recv(socket, &chunk, min(chunk.count, wanted - buffer.count), 0)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard count > 0 else { return .closed }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    // MARK: The child's side

    /// The reader's loop, in the child (`lecternd --media-reader`): a request read from standard input, its reply
    /// written back on it, until the daemon closes it; then the process exits (`_exit`: no atexit handlers or
    /// destructors while GStreamer's threads may be wedged).
    public static func serve() -> Never {
        // Nothing of the daemon's but the socket: no lock file, no bus connection, no database held by the child.
        if let open = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            for fd in open.compactMap({ Int32($0) }) where fd > 2 { close(fd) }
        }
        // A file whose sizes make a demuxer allocate without bound fails (GLib aborts on a failed allocation) when the
        // child reaches 2 GiB of address space, instead of taking the machine's memory. A reader that works maps
        // under 0.7 GiB (VmPeak).
        var limit = rlimit(rlim_cur: Self.addressSpaceLimit, rlim_max: Self.addressSpaceLimit)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit)
        // A crash ends the read at once, without writing a core of up to 2 GiB first.
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
        // One discoverer for every file (remade when the timeout asked for changes, or after a failure).
        var discoverer: Discoverer.Reader?
        while case .message(let payload) = receiveMessage(from: 0, within: nil) {
            let reply: MediaReaderWire.Reply
            guard MediaReaderWire.speaksThisProtocol(payload) else { _exit(3) }  // see notAReader
            if let request = MediaReaderWire.decodeRequest(payload), request.kind == .loudness {
                let urls = request.uris.compactMap(URL.init(string:))
                let timeout = Duration.milliseconds(max(1, request.timeoutMilliseconds))
                alarm(UInt32(clamping: max(1, request.timeoutMilliseconds / 1000) * 2 + 5))
                do throws(MediaError) {
                    reply = .loudness(try Loudness.measure(urls, timeout: timeout))
                } catch {
                    reply = .error(error)
                }
                alarm(0)
            } else if let request = MediaReaderWire.decodeRequest(payload), let url = URL(string: request.uris[0]) {
                // A read wedged in a demuxer ends the child (SIGALRM) once the daemon has stopped waiting for it, even
                // when the daemon is gone: nothing else would.
                let seconds = max(1, request.timeoutMilliseconds / 1000)
                alarm(UInt32(clamping: seconds * 2 + 5))
                do throws(MediaError) {
                    let timeout = Duration.milliseconds(max(1, request.timeoutMilliseconds))
                    if discoverer?.timeout != timeout { discoverer = try Discoverer.Reader(timeout: timeout) }
                    // An MP3 file of a layout it knows is read by MP3Probe (tens of microseconds, the discoverer's
                    // answer); any other file, or an MP3 file it is not certain of, by the discoverer (~1.7 ms).
                    let probed = url.isFileURL && url.pathExtension.lowercased() == "mp3"
                        ? MP3Probe.read(url.path(percentEncoded: false)) : nil
                    var info: MediaInfo
                    if let probed { info = probed } else { info = try discoverer!.discover(url) }
                    info.readMP4Series(of: url)
                    // Words longer than any lyrics may be are not sent: the daemon hears why.
                    if case .text(let text) = info.lyrics, text.utf8.count > Lyrics.maximumSize {
                        info.lyrics = .unreadable(LyricsError.tooLarge(text.utf8.count).description)
                    }
                    reply = .info(info)
                } catch {
                    discoverer = nil
                    reply = .error(error)
                }
                alarm(0)
            } else {
                reply = .error(.failed("the media reader could not read its request"))
            }
            var message = MediaReaderWire.encode(reply)
            if message.count > MediaReaderWire.largestMessage + 4, case .info(var info) = reply {
                info.cover = nil  // a cover of tens of MB: the file without it
                message = MediaReaderWire.encode(.info(info))
            }
            guard sendAll(message, to: 0) else { _exit(1) }
        }
        _exit(0)
    }
}

private extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
