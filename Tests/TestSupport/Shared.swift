import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Files generated once per test process (audio made with gst-launch or ffmpeg takes seconds), only read after,
/// and removed when the process exits.
///
/// ```swift
/// let root = try await GeneratedFiles.directory("reliability-media") { root in
///     try AudioFiles.ogg(root.appendingPathComponent("a.ogg"), seconds: 2)
/// }
/// ```
public enum GeneratedFiles {
    private static let made = Once<URL>(atExit: { try? FileManager.default.removeItem(at: $0) })

    /// `$TMPDIR/lectern-<name>-<pid>`, filled by `make` the first time it is asked for (a failure is kept too).
    /// `make` runs on a thread of its own and callers wait without holding a thread of Swift's cooperative pool
    /// (two on two cores): generating audio takes seconds, during which other tests' D-Bus handlers need the pool.
    public static func directory(_ name: String, _ make: @escaping @Sendable (URL) throws -> Void) async throws -> URL {
        try await made.value(name) {
            let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
            let root = URL(fileURLWithPath: base).appendingPathComponent("lectern-\(name)-\(getpid())", isDirectory: true)
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            try make(root)
            return root
        }
    }
}

/// One GStreamer plugin registry for the daemons a test process starts (`GST_REGISTRY` in their environment).
/// Each fixture gives its lecternd a cache folder of its own, where GStreamer would otherwise rebuild the registry
/// by loading every plugin: about half a second of CPU per daemon, several at once when a parameterized test runs
/// its cases side by side. GStreamer writes the file whole and renames it, so daemons may share it.
public enum GStreamerRegistry {
    public static func path() async throws -> String {
        try await GeneratedFiles.directory("gst-registry") { _ in }.appendingPathComponent("registry.bin").path
    }
}

/// A SplitMix64 generator: the same seed makes the same random choices, so a failure can be replayed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// `PRAGMA integrity_check` of an SQLite file, read by python3's sqlite3 module (another SQLite than the one under
/// test): "ok" when the file is sound.
public func sqliteIntegrityCheck(_ path: String) async throws -> String {
    let script = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print(c.execute('PRAGMA integrity_check').fetchone()[0])"
    let result = try await Subprocess.run("python3", ["-c", script, path], timeout: .seconds(20))
    guard result.status == 0 else { throw SQLiteCheckFailed(description: "python3 sqlite3: \(result.stderr)") }
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

public struct SQLiteCheckFailed: Error, CustomStringConvertible {
    public let description: String
}

/// Reads `read` every `interval` until `condition` holds or `timeout` passes; returns the last value read (the
/// caller checks it, so that a failure shows what was seen).
public func poll<T: Sendable>(timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(20),
                              _ read: () async throws -> T, until condition: (T) -> Bool) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    while true {
        let value = try await read()
        if condition(value) || ContinuousClock.now >= deadline { return value }
        try await Task.sleep(for: interval)
    }
}

/// `make` run on a thread of its own (making audio files, running tools): the caller waits without holding a thread of
/// Swift's cooperative pool, which has one per core, and every other test's async work would stall behind it.
public func offThePool<Value: Sendable>(_ make: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try make() }) }.start()
    }
}

/// Values made once per key per test process, on a thread of their own: callers wait without holding a thread of
/// Swift's cooperative pool (a test making seconds of audio would otherwise stall every other test's async work).
public final class Once<Value: Sendable>: Sendable {
    private let tasks = Mutex<[String: Task<Value, any Error>]>([:])
    private let atExit: (@Sendable (Value) -> Void)?

    /// - Parameter atExit: run for each value made, when the test process exits (e.g. to remove a directory).
    public init(atExit: (@Sendable (Value) -> Void)? = nil) {
        self.atExit = atExit
    }

    /// The value for `key`, made by `make` the first time (a failure is kept and thrown to every caller).
    public func value(_ key: String = "", _ make: @escaping @Sendable () throws -> Value) async throws -> Value {
        let task = tasks.withLock { tasks in
            if let task = tasks[key] { return task }
            let task = Task<Value, any Error> { [atExit] in
                let value = try await offThePool(make)
                if let atExit { ExitHandlers.add { atExit(value) } }
                return value
            }
            tasks[key] = task
            return task
        }
        return try await task.value
    }
}

/// What runs when the test process exits, in one `atexit` handler.
private enum ExitHandlers {
    private static let handlers = Mutex<[@Sendable () -> Void]>([])
    private static let registered: Void = { atexit { ExitHandlers.handlers.withLock { $0 }.forEach { $0() } } }()

    static func add(_ handler: @escaping @Sendable () -> Void) {
        _ = registered
        handlers.withLock { $0.append(handler) }
    }
}
