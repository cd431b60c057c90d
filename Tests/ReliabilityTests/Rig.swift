import DBus
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Every reliability suite nests in this one: one daemon at a time, so that floods and fuzzing never compete
/// with another test's pipeline on the 2-core machine.
@Suite(.serialized) struct Reliability {}

/// How hard the suite pushes: `LECTERN_RELIABILITY=short` (the default, part of every test run) or `full`
/// (`scripts/reliability.sh full`).
struct Profile: Sendable {
    var name: String
    /// SIGKILLs at random instants while playing.
    var kills: Int
    /// Calls of the flood, spread over the concurrent clients.
    var floodCalls: Int
    /// Calls and property sets the fuzzer sends.
    var fuzzCalls: Int
    /// Rounds of the daemon and its bus stopped together during calls.
    var stops: Int

    static let short = Profile(name: "short", kills: 5, floodCalls: 2_000, fuzzCalls: 300, stops: 30)
    static let full = Profile(name: "full", kills: 20, floodCalls: 10_000, fuzzCalls: 4_000, stops: 100)

    static let current: Profile = ProcessInfo.processInfo.environment["LECTERN_RELIABILITY"] == "full" ? .full : .short
}

extension Figures {
    static func ms(_ duration: Duration) -> String { String(format: "%.1f ms", duration.milliseconds) }
}

extension Duration {
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}

enum Names {
    static let mpris = "org.mpris.MediaPlayer2.lectern"
    static let lectern = "org.lectern.Lectern1"
    static let mprisPath = "/org/mpris/MediaPlayer2"
    static let lecternPath = "/org/lectern/Lectern1"
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let library = "org.lectern.Library1"
    static let properties = "org.freedesktop.DBus.Properties"
}

struct RigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A private bus, a temporary directory holding a throw-away library database, and `lecternd` processes started,
/// killed and restarted on them. `with` kills whatever daemon is left and removes everything.
///
/// ```swift
/// try await Rig.with { rig in
///     try await rig.start()
///     let book = try await rig.importBook(folder)
///     rig.crash()                       // SIGKILL
///     try await rig.start()             // the same database
/// }
/// ```
final class Rig: Sendable {
    let bus: PrivateBus
    let directory: TemporaryDirectory
    let client: BusConnection
    let environment: [String: String]
    let databasePath: String
    let log: URL
    private let current = Mutex<Subprocess?>(nil)
    /// ImportFinished signals received: (job, books, error).
    private let finished = ImportLog()
    private final class ImportLog: Sendable {
        let entries = Mutex<[(job: UInt32, books: [Int64], error: String)]>([])
    }

    /// `busLimits`: see `PrivateBus.init(timeout:limits:)`. `databasePath`: a library database that outlives the rig
    /// (rigs one after another on the same library, each on a bus of its own); nil: one in the rig's directory.
    static func with(busLimits: [String: Int] = [:], databasePath: String? = nil, _ body: (Rig) async throws -> Void) async throws {
        let rig = try await Rig(busLimits: busLimits, databasePath: databasePath)
        defer { rig.tearDown() }
        try await body(rig)
    }

    private init(busLimits: [String: Int], databasePath: String?) async throws {
        bus = try PrivateBus(limits: busLimits)
        directory = try TemporaryDirectory(prefix: "lectern-rel")
        log = directory.appending("lecternd.log")
        self.databasePath = databasePath ?? directory.appending("db/library.sqlite").path
        var env = bus.environment
        for (variable, dir) in [("XDG_CACHE_HOME", "xdg-cache"), ("XDG_DATA_HOME", "xdg-data"),
                                ("XDG_CONFIG_HOME", "xdg-config"), ("XDG_STATE_HOME", "xdg-state"), ("", "db")] {
            let url = directory.appending(dir)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            if !variable.isEmpty { env[variable] = url.path }
        }
        env["GST_REGISTRY"] = try await GStreamerRegistry.path()
        environment = env
        client = try BusConnection(address: bus.address)
        let stream = try await client.signals(MatchRule(interface: Names.library, member: "ImportFinished"))
        let finished = self.finished
        Task.detached {
            for await signal in stream {
                guard case .uint32(let job)? = signal.arguments.first, signal.arguments.count >= 3 else { continue }
                let books = signal.arguments[1].elements?.compactMap(\.int64) ?? []
                finished.entries.withLock { $0.append((job, books, signal.arguments[2].string ?? "?")) }
            }
        }
    }

    private func tearDown() {
        if let daemon = current.withLock({ $0 }), daemon.isRunning {
            daemon.kill()
            _ = daemon.waitForExit(timeout: .seconds(5))
        }
        client.close()
        bus.stop()
        directory.remove()
    }

    /// The daemon started last.
    var daemon: Subprocess? { current.withLock { $0 } }

    /// What the daemons wrote to stdout and stderr so far.
    var daemonLog: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// The lecternd arguments: a fake sink that keeps real time, the throw-away database, a private cache.
    var daemonArguments: [String] {
        ["--audio-sink", "fakesink sync=true", "--database", databasePath,
         "--cache-directory", directory.appending("cache").path]
    }

    /// Starts lecternd (behind `wrapper`, e.g. strace or setpriv; with `arguments` after the rig's own) and waits
    /// until it owns both names and has resumed its book, if any.
    @discardableResult
    func start(wrapper: [String] = [], arguments: [String] = []) async throws -> Subprocess {
        let command = wrapper + [builtExecutable("lecternd").path] + daemonArguments + arguments
        let process = try Subprocess(command[0], Array(command.dropFirst()), environment: environment,
                                     stdout: .appendingToFile(log), stderr: .appendingToFile(log))
        current.withLock { $0 = process }
        let deadline = ContinuousClock.now + .seconds(20)
        while !(try await hasOwner(Names.mpris)) {
            guard process.isRunning else {
                throw RigError("lecternd exited (\(process.termination.map { "\($0)" } ?? "?")) before owning its name:\n\(daemonLog)")
            }
            guard ContinuousClock.now < deadline else {
                let stacks = await process.threadStacks()
                process.kill()
                throw RigError("lecternd did not own \(Names.mpris) within 20 s:\n\(daemonLog)\nIts threads:\n\(stacks)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return process
    }

    /// SIGKILL to the daemon; returns once it is gone and its names are free.
    func crash() async throws {
        guard let daemon else { return }
        daemon.kill()
        _ = await daemon.waitForExit(timeout: .seconds(10))
        try await waitForNoOwner()
    }

    /// SIGTERM; the exit status (nil: still running after 15 s, then killed).
    @discardableResult
    func stop() async throws -> Int32? {
        guard let daemon else { return nil }
        daemon.terminate()
        let status = await daemon.waitForExit(timeout: .seconds(15))
        if status == nil {
            daemon.kill()
            _ = await daemon.waitForExit(timeout: .seconds(5))
        }
        try await waitForNoOwner()
        return status
    }

    private func waitForNoOwner() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let lectern = try await hasOwner(Names.lectern)
            let mpris = try await hasOwner(Names.mpris)
            if !lectern && !mpris { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    // MARK: Calls

    func hasOwner(_ name: String) async throws -> Bool {
        try await client.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                              member: "NameHasOwner", [.string(name)], timeout: .seconds(5)).first?.bool ?? false
    }

    /// A method of the MPRIS object (Player interface unless told).
    @discardableResult
    func mpris(_ member: String, _ arguments: [DBusValue] = [], interface: String = Names.player,
               timeout: Duration = .seconds(10)) async throws -> [DBusValue] {
        try await client.call(Names.mpris, path: Names.mprisPath, interface: interface, member: member, arguments,
                              timeout: timeout)
    }

    /// A method of Lectern's own object (Library1 unless told).
    @discardableResult
    func lectern(_ member: String, _ arguments: [DBusValue] = [], interface: String = Names.library,
                 timeout: Duration = .seconds(10)) async throws -> [DBusValue] {
        try await client.call(Names.lectern, path: Names.lecternPath, interface: interface, member: member, arguments,
                              timeout: timeout)
    }

    /// A property, unwrapped: of the Player interface on the MPRIS object unless told.
    func get(_ property: String, interface: String = Names.player, path: String = Names.mprisPath) async throws -> DBusValue {
        let reply = try await client.call(Names.mpris, path: path, interface: Names.properties, member: "Get",
                                          [.string(interface), .string(property)], timeout: .seconds(10))
        guard let value = reply.first?.unwrapped else { throw RigError("Get \(property) returned \(reply)") }
        return value
    }

    func getAll(_ interface: String, path: String) async throws -> [DBusValue] {
        try await client.call(Names.mpris, path: path, interface: Names.properties, member: "GetAll",
                              [.string(interface)], timeout: .seconds(10))
    }

    func position() async throws -> Int64 { try await get("Position").int64 ?? -1 }
    func status() async throws -> String { try await get("PlaybackStatus").string ?? "?" }
    func currentURL() async throws -> String? {
        try await get("Metadata").stringKeyedDictionary?["xesam:url"]?.string
    }
    func currentBook() async throws -> Int64 {
        try await get("CurrentBook", interface: Names.library, path: Names.lecternPath).int64 ?? -1
    }

    /// The D-Bus error name `body` throws; nil if it succeeds.
    func errorName(_ body: () async throws -> Void) async -> String? { await busErrorName(body) }

    /// Polls `read` every 20 ms until `condition` holds or `timeout` passes; the last value read.
    func poll<T: Sendable>(timeout: Duration = .seconds(10), _ read: () async throws -> T,
                           until condition: (T) -> Bool) async throws -> T {
        try await TestSupport.poll(timeout: timeout, read, until: condition)
    }

    /// Imports `folder` as a book and waits for the import to finish; the book's id.
    func importBook(_ folder: URL) async throws -> Int64 {
        let reply = try await lectern("Import", [.string(folder.path), .string("")])
        guard case .uint32(let job)? = reply.first else { throw RigError("Import returned \(reply)") }
        let result = try await poll(timeout: .seconds(60), { self.finished.entries.withLock { $0.first { $0.job == job } } },
                                    until: { $0 != nil })
        guard let result, result.error.isEmpty, let book = result.books.first else {
            throw RigError("import of \(folder.path) failed: \(result.map { "\($0)" } ?? "no ImportFinished")\n\(daemonLog)")
        }
        return book
    }

    /// `PRAGMA integrity_check` of the library file.
    func integrityCheck() async throws -> String { try await sqliteIntegrityCheck(databasePath) }

    /// VmRSS of the daemon in KiB (from /proc).
    func residentKiB() throws -> Int {
        guard let pid = daemon?.pid,
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else {
            throw RigError("cannot read the daemon's VmRSS")
        }
        return kib
    }
}

/// Audio made once per test process for the whole suite, only read after (tests that damage files copy them).
struct ReliabilityMedia: Sendable {
    let root: URL
    /// book/1.ogg, 2.ogg of `bookFileSeconds` each: never ends during a test.
    var book: URL { root.appendingPathComponent("book") }
    static let bookFiles = ["1.ogg", "2.ogg"]
    static let bookFileSeconds = 40.0
    /// One 2 s Ogg file, copied into damaged books.
    var shortFile: URL { root.appendingPathComponent("short.ogg") }

    static func shared() async throws -> ReliabilityMedia {
        ReliabilityMedia(root: try await GeneratedFiles.directory("rel-media") { root in
            let media = ReliabilityMedia(root: root)
            try FileManager.default.createDirectory(at: media.book, withIntermediateDirectories: true)
            for (i, name) in bookFiles.enumerated() {
                try AudioFiles.ogg(media.book.appendingPathComponent(name), seconds: bookFileSeconds, frequency: 330 + 110 * i)
            }
            try AudioFiles.ogg(media.shortFile, seconds: 2)
        })
    }
}

extension SeededGenerator {
    /// `LECTERN_RELIABILITY_SEED` when set (to replay a failure), else a fresh seed.
    static func seed() -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["LECTERN_RELIABILITY_SEED"], let seed = UInt64(text) { return seed }
        return UInt64.random(in: 1...UInt64.max)
    }
}
