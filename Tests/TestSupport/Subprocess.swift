import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Errors thrown by `Subprocess` and the helpers built on it.
public enum SubprocessError: Error, CustomStringConvertible, Sendable {
    /// A bare program name was not found on PATH (or a path is not executable).
    case executableNotFound(String)
    /// posix_spawn (or a call preparing it) failed with this errno.
    case spawnFailed(executable: String, errno: Int32)
    /// `Subprocess.run` gave up; the process was killed. Output read until then is attached.
    case timedOut(command: [String], timeout: Duration, stdout: String, stderr: String)

    public var description: String {
        switch self {
        case .executableNotFound(let name):
            return "executable not found: \(name)"
        case .spawnFailed(let executable, let code):
            return "posix_spawn \(executable) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .timedOut(let command, let timeout, let stdout, let stderr):
            return "timed out after \(timeout), killed: \(command.joined(separator: " "))"
                + "\n--- stdout ---\n\(stdout)\n--- stderr ---\n\(stderr)"
        }
    }
}

/// A child process for tests, started with posix_spawn with an empty signal mask and default signal
/// dispositions (Foundation.Process children inherit a blocked SIGTERM and then ignore `terminate()`).
///
/// Standard input is /dev/null. Standard output and error go to a pipe (drained continuously by a
/// background thread, so a chatty child never blocks), a file, /dev/null, or the test's own streams.
/// Descriptors other than 0, 1 and 2 are closed in the child.
///
/// Blocking methods have `async` overloads with the same names that poll with `Task.sleep` instead of
/// blocking a thread of the (small) cooperative pool: inside an `async` test, write `await`.
///
/// `deinit` kills (SIGKILL) and reaps a child that is still running.
public final class Subprocess: @unchecked Sendable {
    /// Where the child's standard output or standard error goes.
    public enum Output: Sendable {
        /// A pipe read by this object: `readLine`, `readAll`.
        case pipe
        /// A file, created or truncated.
        case file(URL)
        /// A file, created or appended to.
        case appendingToFile(URL)
        /// /dev/null.
        case null
        /// The test process's own descriptor (handy to see a daemon's log while debugging).
        case inherit
    }

    /// One of the child's output streams.
    public enum Stream: Sendable {
        case stdout, stderr
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        /// Shell convention: the exit code, or 128 + the signal number.
        public var status: Int32 {
            switch self {
            case .exited(let code): return code
            case .signaled(let sig): return 128 + sig
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): return "exited(\(code))"
            case .signaled(let sig): return "signaled(\(sig))"
            }
        }
    }

    /// The process id. Valid until the child is reaped; signals are not sent after that.
    public let pid: pid_t
    /// The resolved path of the executable.
    public let executablePath: String
    /// The arguments, without argv[0].
    public let arguments: [String]

    private let lock = NSLock()
    private var _termination: Termination?
    private let stdoutReader: PipeReader?
    private let stderrReader: PipeReader?
    private let processGroup: Bool

    /// Starts `executable` (a path, or a bare name looked up on PATH of `environment`, else of this process).
    ///
    /// - Parameters:
    ///   - environment: the child's complete environment; nil inherits this process's. See `environment(adding:removing:)`.
    ///   - workingDirectory: nil keeps this process's.
    ///   - newProcessGroup: put the child in a process group of its own; `signal(_:)` then signals the whole group
    ///     (e.g. `sh -c` and everything it started).
    public init(
        _ executable: String,
        _ arguments: [String] = [],
        environment: [String: String]? = nil,
        workingDirectory: URL? = nil,
        stdout: Output = .pipe,
        stderr: Output = .pipe,
        newProcessGroup: Bool = false
    ) throws {
        let env = environment ?? ProcessInfo.processInfo.environment
        guard let path = Subprocess.findExecutable(executable, environment: env) else {
            throw SubprocessError.executableNotFound(executable)
        }
        self.executablePath = path
        self.arguments = arguments
        self.processGroup = newProcessGroup

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }

        // Empty signal mask, every signal back to its default action.
        var emptySet = sigset_t()
        sigemptyset(&emptySet)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attr, &emptySet)
        posix_spawnattr_setsigdefault(&attr, &allSignals)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        if newProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attr, 0)
        }
        posix_spawnattr_setflags(&attr, Int16(flags))

        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)

        // Parent ends of pipes, closed on failure; child ends, closed after spawning.
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        func closeAll(_ fds: [Int32]) { for fd in fds { close(fd) } }

        func setUp(_ output: Output, fd target: Int32) throws -> Int32? {
            switch output {
            case .pipe:
                var fds: [Int32] = [-1, -1]
                guard GNU.pipeCloexec(&fds) == 0 else {
                    let code = errno
                    closeAll(parentEnds + childEnds)
                    throw SubprocessError.spawnFailed(executable: path, errno: code)
                }
                parentEnds.append(fds[0])
                childEnds.append(fds[1])
                posix_spawn_file_actions_adddup2(&actions, fds[1], target)
                return fds[0]
            case .file(let url):
                posix_spawn_file_actions_addopen(&actions, target, url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                return nil
            case .appendingToFile(let url):
                posix_spawn_file_actions_addopen(&actions, target, url.path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                return nil
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
                return nil
            case .inherit:
                return nil
            }
        }
        let outFD = try setUp(stdout, fd: 1)
        let errFD = try setUp(stderr, fd: 2)
        // Nothing but 0, 1 and 2 reaches the child, whatever other tests running in parallel have open.
        if let closeFrom = GNU.addclosefrom {
            _ = closeFrom(&actions, 3)
        }
        if let dir = workingDirectory {
            guard let addChdir = GNU.addchdir else {
                closeAll(parentEnds + childEnds)
                throw SubprocessError.spawnFailed(executable: path, errno: ENOSYS)
            }
            _ = addChdir(&actions, dir.path)
        }

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }

        var child: pid_t = 0
        let rc = argv.withUnsafeBufferPointer { argvBuf in
            envp.withUnsafeBufferPointer { envpBuf in
                posix_spawn(&child, path, &actions, &attr, argvBuf.baseAddress!, envpBuf.baseAddress!)
            }
        }
        closeAll(childEnds)
        guard rc == 0 else {
            closeAll(parentEnds)
            throw SubprocessError.spawnFailed(executable: path, errno: rc)
        }
        self.pid = child
        self.stdoutReader = outFD.map { PipeReader(fd: $0, name: "subprocess-\(child)-stdout") }
        self.stderrReader = errFD.map { PipeReader(fd: $0, name: "subprocess-\(child)-stderr") }
    }

    deinit {
        lock.lock()
        if _termination == nil {
            posixKill(processGroup ? -pid : pid, SIGKILL)
            if processGroup { posixKill(pid, SIGKILL) }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }
        lock.unlock()
        stdoutReader?.cancel()
        stderrReader?.cancel()
    }

    // MARK: Environment and PATH

    /// This process's environment with `adding` set and `removing` taken out.
    public static func environment(
        adding: [String: String] = [:], removing: [String] = []
    ) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in removing { env.removeValue(forKey: key) }
        env.merge(adding) { _, new in new }
        return env
    }

    /// `name` (made absolute) if it contains a slash and is executable, else the first executable `name` on PATH of
    /// `environment` (default: this process's), else nil.
    public static func findExecutable(_ name: String, environment: [String: String]? = nil) -> String? {
        if name.contains("/") {
            // Absolute, so that a working directory for the child doesn't change what runs.
            let path = name.hasPrefix("/") ? name : FileManager.default.currentDirectoryPath + "/" + name
            return access(path, X_OK) == 0 ? path : nil
        }
        let env = environment ?? ProcessInfo.processInfo.environment
        let path = env["PATH"] ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":", omittingEmptySubsequences: true) {
            let candidate = "\(dir)/\(name)"
            var st = stat()
            if stat(candidate, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    // MARK: Signals

    /// Sends `sig` to the child (to its process group with `newProcessGroup`). No-op once reaped.
    public func signal(_ sig: Int32) {
        lock.lock()
        defer { lock.unlock() }
        guard _termination == nil else { return }
        if processGroup {
            posixKill(-pid, sig)
        } else {
            posixKill(pid, sig)
        }
    }

    /// SIGKILL.
    public func kill() { signal(SIGKILL) }

    /// SIGTERM.
    public func terminate() { signal(SIGTERM) }

    // MARK: Waiting

    /// How the child ended, once reaped (by `waitForExit`, `isRunning`, ...); nil before.
    public var termination: Termination? {
        lock.lock()
        defer { lock.unlock() }
        return _termination
    }

    /// Whether the child is still running (reaps it if it has ended).
    public var isRunning: Bool { poll() == nil }

    /// Reaps the child if it has ended, without blocking.
    private func poll() -> Termination? {
        lock.lock()
        defer { lock.unlock() }
        if let t = _termination { return t }
        var status: Int32 = 0
        var r: pid_t
        repeat { r = waitpid(pid, &status, WNOHANG) } while r == -1 && errno == EINTR
        if r == pid {
            _termination = Subprocess.decode(status)
        } else if r == -1 && errno == ECHILD {
            // Someone else reaped it: we can't know how it ended.
            _termination = .exited(-1)
        }
        return _termination
    }

    static func decode(_ status: Int32) -> Termination {
        let low = status & 0x7f
        if low == 0 { return .exited((status >> 8) & 0xff) }
        return .signaled(low)
    }

    /// Waits for the child to end. Returns its exit code, or 128 + the signal that killed it (see
    /// `termination` to tell them apart); nil if it is still running after `timeout`.
    @discardableResult
    public func waitForExit(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var interval: useconds_t = 1_000
        while true {
            if let t = poll() { return t.status }
            if ContinuousClock.now >= deadline { return nil }
            usleep(interval)
            interval = min(interval * 2, 20_000)
        }
    }

    /// `waitForExit(timeout:)` without blocking a thread.
    @discardableResult
    public func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var interval = Duration.milliseconds(1)
        while true {
            if let t = poll() { return t.status }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: interval)
            interval = min(interval * 2, .milliseconds(20))
        }
    }

    // MARK: Output

    private func reader(_ stream: Stream) -> PipeReader? {
        stream == .stdout ? stdoutReader : stderrReader
    }

    /// The next line (without its newline) from a `.pipe` stream. At end of file, the unterminated rest if
    /// any, then nil. nil on timeout, or if the stream is not a pipe.
    public func readLine(timeout: Duration, from stream: Stream = .stdout) -> String? {
        reader(stream)?.readLine(deadline: ContinuousClock.now.advanced(by: timeout))
    }

    /// `readLine(timeout:from:)` without blocking a thread.
    public func readLine(timeout: Duration, from stream: Stream = .stdout) async -> String? {
        guard let r = reader(stream) else { return nil }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            switch r.tryReadLine() {
            case .line(let s): return s
            case .end: return nil
            case .wait:
                if ContinuousClock.now >= deadline { return nil }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// Everything not yet consumed by `readLine` from a `.pipe` stream, once it reaches end of file (the child
    /// and anything it started closed it), or what has arrived when `timeout` passes. "" if not a pipe.
    public func readAll(_ stream: Stream = .stdout, timeout: Duration = .seconds(10)) -> String {
        reader(stream)?.readAll(deadline: ContinuousClock.now.advanced(by: timeout)) ?? ""
    }

    /// `readAll(_:timeout:)` without blocking a thread.
    public func readAll(_ stream: Stream = .stdout, timeout: Duration = .seconds(10)) async -> String {
        guard let r = reader(stream) else { return "" }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !r.isAtEnd && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
        return r.takeAll()
    }

    /// Every thread's stack of this running process, from gdb (`thread apply all bt`), for a failure's message:
    /// what a daemon that stopped answering was doing. A line saying why there is none when gdb is missing or
    /// fails (gdb is in scripts/install-deps.sh's test packages).
    public func threadStacks(timeout: Duration = .seconds(30)) async -> String {
        guard isRunning else { return "(no stacks: the process has exited)" }
        guard Subprocess.findExecutable("gdb") != nil else { return "(no stacks: gdb is not installed)" }
        do {
            let (_, out, err) = try await Subprocess.run(
                "gdb", ["-p", "\(pid)", "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt"],
                timeout: timeout)
            // gdb's own chatter (symbol loading) comes before the first thread.
            let stacks = out.range(of: "\nThread ").map { String(out[$0.lowerBound...]) } ?? out
            return stacks.isEmpty ? "(no stacks: gdb said \(err.suffix(500)))" : stacks
        } catch {
            return "(no stacks: \(error))"
        }
    }

    // MARK: Short-lived tools

    /// Runs a short-lived tool to completion and returns its status (`waitForExit` encoding), standard output
    /// and standard error. Kills it and throws `SubprocessError.timedOut` if it runs longer than `timeout`.
    public static func run(
        _ executable: String,
        _ arguments: [String] = [],
        env: [String: String]? = nil,
        workingDirectory: URL? = nil,
        timeout: Duration = .seconds(60)
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let start = ContinuousClock.now
        let p = try Subprocess(executable, arguments, environment: env, workingDirectory: workingDirectory)
        guard let status = p.waitForExit(timeout: timeout) else {
            p.kill()
            _ = p.waitForExit(timeout: .seconds(5))
            throw SubprocessError.timedOut(
                command: [executable] + arguments, timeout: timeout,
                stdout: p.readAll(.stdout, timeout: .milliseconds(100)),
                stderr: p.readAll(.stderr, timeout: .milliseconds(100)))
        }
        // A daemonized grandchild may keep the pipes open: don't wait for it beyond the deadline (min 1 s).
        let rest = max(timeout - (ContinuousClock.now - start), .seconds(1))
        let out = p.readAll(.stdout, timeout: rest)
        let err = p.readAll(.stderr, timeout: .milliseconds(200))
        return (status, out, err)
    }

    /// `run(_:_:env:workingDirectory:timeout:)` without blocking a thread.
    public static func run(
        _ executable: String,
        _ arguments: [String] = [],
        env: [String: String]? = nil,
        workingDirectory: URL? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let start = ContinuousClock.now
        let p = try Subprocess(executable, arguments, environment: env, workingDirectory: workingDirectory)
        guard let status = await p.waitForExit(timeout: timeout) else {
            p.kill()
            _ = await p.waitForExit(timeout: .seconds(5))
            throw SubprocessError.timedOut(
                command: [executable] + arguments, timeout: timeout,
                stdout: await p.readAll(.stdout, timeout: .milliseconds(100)),
                stderr: await p.readAll(.stderr, timeout: .milliseconds(100)))
        }
        let rest = max(timeout - (ContinuousClock.now - start), .seconds(1))
        let out = await p.readAll(.stdout, timeout: rest)
        let err = await p.readAll(.stderr, timeout: .milliseconds(200))
        return (status, out, err)
    }
}

/// glibc's GNU extensions, which the Swift Glibc module doesn't export (it isn't built with _GNU_SOURCE):
/// found with dlsym. All present in glibc >= 2.34 (Debian 12 has 2.36).
private enum GNU {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32

    static func symbol<T>(_ name: String, as type: T.Type) -> T? {
        guard let handle = dlopen(nil, RTLD_NOW), let sym = dlsym(handle, name) else { return nil }
        return unsafeBitCast(sym, to: type)
    }

    static let addclosefrom = symbol("posix_spawn_file_actions_addclosefrom_np", as: AddCloseFrom.self)
    static let addchdir = symbol("posix_spawn_file_actions_addchdir_np", as: AddChdir.self)
    static let pipe2 = symbol("pipe2", as: Pipe2.self)

    /// pipe2(O_CLOEXEC), or pipe + FD_CLOEXEC (not atomic) without it.
    static func pipeCloexec(_ fds: UnsafeMutablePointer<Int32>) -> Int32 {
        if let pipe2 { return pipe2(fds, O_CLOEXEC) }
        guard pipe(fds) == 0 else { return -1 }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        return 0
    }
}

/// `kill(2)`, out of reach of `Subprocess.kill()` inside the class.
private func posixKill(_ pid: pid_t, _ sig: Int32) {
    _ = kill(pid, sig)
}

/// Drains one pipe on a thread of its own into a buffer.
final class PipeReader: @unchecked Sendable {
    enum LineResult { case line(String), wait, end }

    private let condition = NSCondition()
    private var buffer: [UInt8] = []
    private var eof = false
    private var cancelled = false
    private let fd: Int32

    init(fd: Int32, name: String) {
        self.fd = fd
        let thread = Thread { [self] in self.run() }
        thread.name = name
        thread.start()
    }

    private func run() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        loop: while true {
            condition.lock()
            let stop = cancelled
            condition.unlock()
            if stop { break }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 100)
            if ready == 0 { continue }
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                condition.lock()
                buffer.append(contentsOf: chunk[0..<n])
                condition.broadcast()
                condition.unlock()
            } else if n == 0 {
                break loop
            } else if errno != EINTR && errno != EAGAIN {
                break loop
            }
        }
        close(fd)
        condition.lock()
        eof = true
        condition.broadcast()
        condition.unlock()
    }

    func cancel() {
        condition.lock()
        cancelled = true
        condition.unlock()
    }

    var isAtEnd: Bool {
        condition.lock()
        defer { condition.unlock() }
        return eof
    }

    /// Must hold the lock.
    private func takeLine() -> LineResult {
        if let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: buffer[..<nl], as: UTF8.self)
            buffer.removeSubrange(...nl)
            return .line(line)
        }
        if eof {
            if buffer.isEmpty { return .end }
            let line = String(decoding: buffer, as: UTF8.self)
            buffer.removeAll()
            return .line(line)
        }
        return .wait
    }

    func tryReadLine() -> LineResult {
        condition.lock()
        defer { condition.unlock() }
        return takeLine()
    }

    func readLine(deadline: ContinuousClock.Instant) -> String? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch takeLine() {
            case .line(let s): return s
            case .end: return nil
            case .wait:
                guard let until = PipeReader.date(deadline) else { return nil }
                _ = condition.wait(until: until)
            }
        }
    }

    func readAll(deadline: ContinuousClock.Instant) -> String {
        condition.lock()
        while !eof, let until = PipeReader.date(deadline) {
            _ = condition.wait(until: until)
        }
        condition.unlock()
        return takeAll()
    }

    func takeAll() -> String {
        condition.lock()
        defer { condition.unlock() }
        let s = String(decoding: buffer, as: UTF8.self)
        buffer.removeAll()
        return s
    }

    /// The wall-clock date for `deadline`, or nil if it has passed.
    private static func date(_ deadline: ContinuousClock.Instant) -> Date? {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return nil }
        let (s, atto) = left.components
        return Date(timeIntervalSinceNow: Double(s) + Double(atto) / 1e18)
    }
}
