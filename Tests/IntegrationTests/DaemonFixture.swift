import DBus
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Every integration suite nests in one of four groups, each of which runs one daemon at a time, so that at most
/// four daemons (with their pipelines, playerctl and ffmpeg) run at once. The groups run side by side: a test's
/// daemon mostly waits for real time to pass (audio to play, a watcher's delay), which leaves the cores idle.
@Suite struct Integration {
    /// The library: imports, watched folders, history, bookmarks, search, the Playlists interface.
    @Suite(.serialized) struct Library {}
    /// Playback: opening, metadata, transport, seeking, resume, gapless, skips, loudness, lyrics.
    @Suite(.serialized) struct Player {}
    /// What the desktop and the user see: the documented API, configuration, the CLI, GNOME Shell, the daemon's
    /// lifecycle, the root interface.
    @Suite(.serialized) struct Desktop {}
    /// What goes wrong: bad input from clients, the library's database and files failing under the daemon.
    @Suite(.serialized) struct Faults {}
}

// MARK: - Names

enum MPRIS {
    static let busName = "org.mpris.MediaPlayer2.lectern"
    static let lecternName = "org.lectern.Lectern1"
    static let path = "/org/mpris/MediaPlayer2"
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let playlists = "org.mpris.MediaPlayer2.Playlists"
    static let trackList = "org.mpris.MediaPlayer2.TrackList"
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let peer = "org.freedesktop.DBus.Peer"
}

enum DBusErrors {
    static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
}

// MARK: - Media

/// The audio files every test opens, generated once per test process (a few seconds) and only read after.
final class MediaLibrary: Sendable {
    let root: URL

    /// 1.ogg, 2.ogg, 10.ogg, 3 s each, untagged: natural order is 1, 2, 10 (lexical would be 1, 10, 2).
    var book: URL { root.appendingPathComponent("book") }
    static let bookFiles = ["1.ogg", "2.ogg", "10.ogg"]
    static let bookSeconds = 3.0
    /// 1.ogg, 2.ogg, 3.ogg of 1 s each: plays through in a few seconds.
    var shortBook: URL { root.appendingPathComponent("short") }
    static let shortFiles = ["1.ogg", "2.ogg", "3.ogg"]
    /// 1.ogg, 2.ogg, 3.ogg of 20 s each: never advances on its own during a test.
    var longBook: URL { root.appendingPathComponent("longbook") }
    static let longBookFiles = ["1.ogg", "2.ogg", "3.ogg"]
    /// One 60 s Ogg file, for seeking.
    var long: URL { root.appendingPathComponent("single/long.ogg") }
    static let longSeconds = 60.0
    /// 01.mp3 ("Chapter One") and 02.mp3 ("Chapter Two"), 20 s each, tagged.
    var mp3Book: URL { root.appendingPathComponent("mp3book") }
    static let mp3BookTitles = ["Chapter One", "Chapter Two"]
    /// A 3 s MP3 tagged with ``tags``.
    var taggedMP3: URL { root.appendingPathComponent("single/tagged.mp3") }
    /// ``taggedMP3`` with ``cover`` embedded.
    var coverMP3: URL { root.appendingPathComponent("covered/cover.mp3") }
    /// The PNG embedded in ``coverMP3`` (kept apart from it: no cover.png beside the mp3).
    var cover: URL { root.appendingPathComponent("art/cover.png") }
    /// 2 s WAV, 2 s FLAC, 4 s M4B (tagged).
    var wav: URL { root.appendingPathComponent("formats/tone.wav") }
    var flac: URL { root.appendingPathComponent("formats/tone.flac") }
    var m4b: URL { root.appendingPathComponent("formats/book.m4b") }
    /// A folder without audio files.
    var emptyFolder: URL { root.appendingPathComponent("empty") }

    static let tags = AudioFiles.Tags(title: "The Tagged Title", artist: "Ann Author", album: "A Long Book")
    static let m4bTags = AudioFiles.Tags(title: "M4B Chapter", artist: "Bo Reader", album: "Audio Book")

    private static let instance = Once<MediaLibrary>(atExit: { try? FileManager.default.removeItem(at: $0.root) })

    /// Made once per test process, on a thread of its own (see ``Once``), removed when the process exits.
    static func shared() async throws -> MediaLibrary {
        try await instance.value { try MediaLibrary() }
    }

    private init() throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        root = URL(fileURLWithPath: base)
            .appendingPathComponent("lectern-it-media-\(getpid())-\(UUID().uuidString.prefix(6))", isDirectory: true)
        let fm = FileManager.default
        for dir in ["book", "short", "longbook", "single", "mp3book", "covered", "art", "formats", "empty"] {
            try fm.createDirectory(at: root.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        for (i, name) in Self.bookFiles.enumerated() {
            try AudioFiles.ogg(book.appendingPathComponent(name), seconds: Self.bookSeconds, frequency: 330 + 110 * i)
        }
        for (i, name) in Self.shortFiles.enumerated() {
            try AudioFiles.ogg(shortBook.appendingPathComponent(name), seconds: 1, frequency: 330 + 110 * i)
        }
        for (i, name) in Self.longBookFiles.enumerated() {
            try AudioFiles.ogg(longBook.appendingPathComponent(name), seconds: 20, frequency: 330 + 110 * i)
        }
        try AudioFiles.ogg(long, seconds: Self.longSeconds)
        for (i, title) in Self.mp3BookTitles.enumerated() {
            try AudioFiles.mp3(mp3Book.appendingPathComponent(String(format: "%02d.mp3", i + 1)), seconds: 20,
                               tags: .init(title: title, artist: "Ann Author", album: "The CLI Book"))
        }
        try AudioFiles.mp3(taggedMP3, seconds: 3, tags: Self.tags)
        try AudioFiles.png(cover)
        try AudioFiles.mp3WithCover(taggedMP3, cover: cover, output: coverMP3)
        try AudioFiles.wav(wav, seconds: 2)
        try AudioFiles.flac(flac, seconds: 2)
        try AudioFiles.m4b(m4b, seconds: 4, tags: Self.m4bTags)
    }

    static func uri(_ url: URL) -> String { url.standardizedFileURL.absoluteString }
}

// MARK: - Signals

/// One signal as the test client received it.
struct RecordedSignal: Sendable, CustomStringConvertible {
    let index: Int
    let time: ContinuousClock.Instant
    let sender: String?
    let path: String
    let interface: String
    let member: String
    let arguments: [DBusValue]

    var isPropertiesChanged: Bool { interface == MPRIS.properties && member == "PropertiesChanged" }
    /// For a PropertiesChanged: the interface whose properties changed.
    var changedInterface: String? { isPropertiesChanged ? arguments.first?.string : nil }
    /// For a PropertiesChanged: the changed values.
    var changed: [String: DBusValue] {
        isPropertiesChanged && arguments.count > 1 ? arguments[1].stringKeyedDictionary ?? [:] : [:]
    }
    var invalidated: [String] { isPropertiesChanged && arguments.count > 2 ? arguments[2].stringArray ?? [] : [] }
    /// Player properties changed by this signal (empty for any other signal).
    var playerChanges: [String: DBusValue] {
        path == MPRIS.path && changedInterface == MPRIS.player ? changed : [:]
    }
    /// For a Seeked: its position in µs.
    var seekedPosition: Int64? {
        path == MPRIS.path && interface == MPRIS.player && member == "Seeked" ? arguments.first?.int64 : nil
    }

    var description: String { "#\(index) \(path) \(interface).\(member) \(arguments)" }
}

/// Records every signal the client receives (one subscription, so arrival order is kept), from before the
/// test acts until the connection closes.
final class SignalRecorder: Sendable {
    private final class Log: Sendable {
        let signals = Mutex<[RecordedSignal]>([])
        func append(_ m: ReceivedMessage) {
            signals.withLock {
                $0.append(RecordedSignal(index: $0.count, time: .now, sender: m.sender, path: m.path?.rawValue ?? "",
                                         interface: m.interface ?? "", member: m.member ?? "", arguments: m.arguments))
            }
        }
    }
    private let log = Log()
    private let barrierCount = Atomic<UInt32>(0)
    private let connection: BusConnection
    static let barrierPath = "/org/lectern/IntegrationTests/Barrier"
    static let barrierInterface = "org.lectern.IntegrationTests"

    init(connection: BusConnection) async throws {
        self.connection = connection
        // All signals, including our own barrier signals (the bus sends a sender its own broadcasts when it
        // subscribed to them).
        let stream = try await connection.signals(MatchRule())
        let log = self.log
        Task.detached { for await message in stream { log.append(message) } }
    }

    var all: [RecordedSignal] { log.signals.withLock { $0 } }
    /// A position in the log: pass it as `since` to look only at what came after.
    var mark: Int { log.signals.withLock { $0.count } }

    func since(_ mark: Int) -> [RecordedSignal] { log.signals.withLock { Array($0[min(mark, $0.count)...]) } }

    /// Player PropertiesChanged payloads after `mark`.
    func playerChanges(since mark: Int) -> [[String: DBusValue]] {
        since(mark).map(\.playerChanges).filter { !$0.isEmpty }
    }
    /// Values `property` took in Player PropertiesChanged after `mark`.
    func values(of property: String, since mark: Int) -> [DBusValue] {
        playerChanges(since: mark).compactMap { $0[property] }
    }
    /// Seeked positions after `mark`.
    func seeked(since mark: Int) -> [Int64] { since(mark).compactMap(\.seekedPosition) }

    /// The first signal after `mark` satisfying `predicate`, waiting up to `timeout` for it.
    @discardableResult
    func waitFor(since mark: Int = 0, timeout: Duration = .seconds(5),
                 _ predicate: (RecordedSignal) -> Bool) async -> RecordedSignal? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = since(mark).first(where: predicate) { return found }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until every signal the daemon sent before answering our last call is recorded: sends a signal of
    /// our own and waits for it to come back. The bus keeps each connection's messages in order, so anything
    /// the daemon emitted before its reply reached us before this signal. Returns the barrier's index.
    @discardableResult
    func barrier() async throws -> Int {
        let token = barrierCount.add(1, ordering: .relaxed).newValue
        try connection.emitSignal(path: ObjectPath(Self.barrierPath)!, interface: Self.barrierInterface,
                                  member: "Barrier", arguments: [.uint32(token)])
        guard let signal = await waitFor(timeout: .seconds(10), {
            $0.path == Self.barrierPath && $0.arguments.first == .uint32(token)
        }) else {
            throw FixtureError("barrier signal \(token) never came back")
        }
        return signal.index
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - The daemon

/// A private bus, a temporary directory, a running `lecternd` on that bus, a client connection and a signal
/// recorder subscribed before anything happens.
///
/// ```swift
/// try await DaemonFixture.with { d in
///     try await d.openURI(d.media.book)
///     ...
/// }
/// ```
/// `with` stops the daemon with SIGTERM at the end and checks that it exited 0, released its names and
/// never sent Position (or CanControl) in a PropertiesChanged.
final class DaemonFixture: Sendable {
    typealias ToolResult = (status: Int32, stdout: String, stderr: String)

    let bus: PrivateBus
    let directory: TemporaryDirectory
    let media: MediaLibrary
    let daemon: Subprocess
    let client: BusConnection
    let signals: SignalRecorder
    /// The environment of every process of the test: the private bus, XDG directories in `directory`.
    let environment: [String: String]
    let cacheDirectory: URL
    let daemonLog: URL
    /// lecternd's arguments: a fake sink that keeps time, the test's cache folder, and the test's own.
    let daemonArguments: [String]

    /// The lecternd the fixture runs, and its client: this build's, or those of an ``Installation``.
    let lecterndPath: String
    let lecternPath: String

    /// Starts everything with a daemon. With `installation`, the daemon is the installed lecternd and the bus activates
    /// from the installed activation files, in the fixture's environment.
    /// `daemonEnvironment`: variables set (or replaced) for lecternd only; `daemonPrefix`: what runs it, before its path
    /// (``NetworkNamespace/prefix``: lecternd in a network namespace).
    static func with(daemonArguments: [String] = [], daemonEnvironment: [String: String] = [:], daemonPrefix: [String] = [],
                     installation: Installation? = nil, _ body: (DaemonFixture) async throws -> Void) async throws {
        let fixture = try await DaemonFixture(daemonArguments: daemonArguments, daemonEnvironment: daemonEnvironment,
                                              daemonPrefix: daemonPrefix, installation: installation)
        do {
            try await body(fixture)
        } catch {
            await fixture.finish(checkExit: false)
            throw error
        }
        await fixture.finish()
    }

    private init(daemonArguments extra: [String], daemonEnvironment: [String: String], daemonPrefix: [String],
                 installation: Installation?) async throws {
        media = try await MediaLibrary.shared()
        bus = try PrivateBus(serviceDirectories: installation.map { [$0.servicesDirectory] } ?? [])
        lecterndPath = installation?.lecternd ?? builtExecutable("lecternd").path
        lecternPath = installation?.lectern ?? builtExecutable("lectern").path
        directory = try TemporaryDirectory(prefix: "lectern-it")
        cacheDirectory = directory.appending("cache")
        daemonLog = directory.appending("lecternd.log")
        var env = bus.environment
        for (variable, dir) in [("XDG_CACHE_HOME", "xdg-cache"), ("XDG_DATA_HOME", "xdg-data"),
                                ("XDG_CONFIG_HOME", "xdg-config"), ("XDG_STATE_HOME", "xdg-state")] {
            let url = directory.appending(dir)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            env[variable] = url.path
        }
        env["GST_REGISTRY"] = try await GStreamerRegistry.path()
        environment = env
        client = try BusConnection(address: bus.address)
        signals = try await SignalRecorder(connection: client)
        if installation != nil {
            // A daemon the bus would activate uses the test's folders too, never the machine's.
            try await setActivationEnvironment(env.filter { $0.key.hasPrefix("XDG_") || $0.key == "GST_REGISTRY" }, on: client)
        }
        // A fake sink that keeps time, unless the test names its own.
        let sink = extra.contains("--audio-sink") ? [] : ["--audio-sink", "fakesink sync=true"]
        daemonArguments = sink + ["--cache-directory", cacheDirectory.path] + extra
        let command = daemonPrefix + [lecterndPath] + daemonArguments
        daemon = try Subprocess(command[0], Array(command.dropFirst()), environment: env.merging(daemonEnvironment) { $1 },
                                stdout: .appendingToFile(daemonLog),
                                stderr: .appendingToFile(daemonLog))
        let deadline = ContinuousClock.now + .seconds(10)
        while !(try await nameHasOwner(MPRIS.busName)) {
            guard daemon.isRunning else {
                throw FixtureError("lecternd exited (\(daemon.termination.map { "\($0)" } ?? "?")) before owning "
                                   + "\(MPRIS.busName):\n\(log)")
            }
            guard ContinuousClock.now < deadline else {
                let stacks = await daemon.threadStacks()
                daemon.kill()
                throw FixtureError("lecternd did not own \(MPRIS.busName) within 10 s:\n\(log)\nIts threads:\n\(stacks)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// What lecternd has written to stdout and stderr so far.
    var log: String { (try? String(contentsOf: daemonLog, encoding: .utf8)) ?? "" }

    /// Stops the daemon (SIGTERM) if the test did not, checks how it went, and tears everything down.
    func finish(checkExit: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) async {
        if daemon.isRunning {
            let status = await stopDaemon()
            if checkExit {
                #expect(status == 0, "lecternd did not exit 0 on SIGTERM:\n\(log)", sourceLocation: sourceLocation)
                #expect(await (try? nameHasOwner(MPRIS.busName)) == false, sourceLocation: sourceLocation)
                #expect(await (try? nameHasOwner(MPRIS.lecternName)) == false, sourceLocation: sourceLocation)
            }
        }
        // Over the whole test: Position and CanControl never in PropertiesChanged, nothing but the MPRIS
        // interfaces signalled on the MPRIS path.
        let all = signals.all
        let withPosition = all.filter { $0.isPropertiesChanged && ($0.changed["Position"] != nil || $0.invalidated.contains("Position")) }
        #expect(withPosition.isEmpty, "PropertiesChanged carried Position: \(withPosition)", sourceLocation: sourceLocation)
        let withCanControl = all.filter { $0.isPropertiesChanged && $0.changed["CanControl"] != nil }
        #expect(withCanControl.isEmpty, "PropertiesChanged carried CanControl: \(withCanControl)", sourceLocation: sourceLocation)
        let foreign = all.filter { s in
            s.path == MPRIS.path
                && !(s.isPropertiesChanged && [MPRIS.root, MPRIS.player, MPRIS.playlists, MPRIS.trackList].contains(s.changedInterface ?? ""))
                && !(s.interface == MPRIS.player && s.member == "Seeked")
                && !(s.interface == MPRIS.trackList && ["TrackListReplaced", "TrackAdded", "TrackRemoved", "TrackMetadataChanged"].contains(s.member))
        }
        #expect(foreign.isEmpty, "unexpected signals on \(MPRIS.path): \(foreign)", sourceLocation: sourceLocation)
        // TrackList.Tracks is 'invalidates': never sent with a value.
        let tracksWithValue = all.filter { $0.isPropertiesChanged && $0.changedInterface == MPRIS.trackList && $0.changed["Tracks"] != nil }
        #expect(tracksWithValue.isEmpty, "Tracks sent with a value: \(tracksWithValue)", sourceLocation: sourceLocation)
        if daemon.isRunning { daemon.kill() }
        client.close()
        bus.stop()
        directory.remove()
    }

    /// SIGTERM, then waits up to 15 s for the exit; nil if it did not exit (it is then killed).
    @discardableResult
    func stopDaemon() async -> Int32? {
        daemon.terminate()
        let status = await daemon.waitForExit(timeout: .seconds(15))
        if status == nil {
            daemon.kill()
            await daemon.waitForExit(timeout: .seconds(5))
        }
        return status
    }

    /// Starts another lecternd on the same bus (stdout and stderr piped).
    func launchAnotherDaemon() throws -> Subprocess {
        try Subprocess(lecterndPath,
                       ["--audio-sink", "fakesink sync=true", "--cache-directory", directory.appending("cache2").path],
                       environment: environment, stdout: .pipe, stderr: .pipe)
    }

    // MARK: Bus helpers

    func nameHasOwner(_ name: String) async throws -> Bool {
        try await client.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                              member: "NameHasOwner", [.string(name)], timeout: .seconds(5)).first?.bool ?? false
    }

    func nameOwner(_ name: String) async throws -> String? {
        try await client.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                              member: "GetNameOwner", [.string(name)], timeout: .seconds(5)).first?.string
    }

    /// Calls a method on /org/mpris/MediaPlayer2 (Player interface by default).
    @discardableResult
    func call(_ method: String, _ arguments: [DBusValue] = [], interface: String? = MPRIS.player,
              path: String = MPRIS.path) async throws -> [DBusValue] {
        try await client.call(MPRIS.busName, path: path, interface: interface, member: method, arguments,
                              timeout: .seconds(10))
    }

    /// `Properties.Get`, unwrapped.
    @discardableResult
    func get(_ property: String, interface: String = MPRIS.player) async throws -> DBusValue {
        let reply = try await call("Get", [.string(interface), .string(property)], interface: MPRIS.properties)
        guard let value = reply.first?.unwrapped else { throw FixtureError("Get \(property) returned \(reply)") }
        return value
    }

    /// `Properties.GetAll`, values unwrapped.
    @discardableResult
    func getAll(_ interface: String = MPRIS.player) async throws -> [String: DBusValue] {
        let reply = try await call("GetAll", [.string(interface)], interface: MPRIS.properties)
        guard let values = reply.first?.stringKeyedDictionary else { throw FixtureError("GetAll returned \(reply)") }
        return values
    }

    /// `Properties.Set`.
    func set(_ property: String, _ value: DBusValue, interface: String = MPRIS.player) async throws {
        try await call("Set", [.string(interface), .string(property), .variant(value)], interface: MPRIS.properties)
    }

    /// The D-Bus error name `body` throws; nil if it succeeds (or throws something that is not a D-Bus error).
    func errorName(_ body: () async throws -> Void) async -> String? { await busErrorName(body) }

    // MARK: Player helpers

    func metadata() async throws -> [String: DBusValue] { try await get("Metadata").stringKeyedDictionary ?? [:] }
    func status() async throws -> String? { try await get("PlaybackStatus").string }
    func position() async throws -> Int64 { try await get("Position").int64 ?? -1 }
    func currentURL() async throws -> String? { try await metadata()["xesam:url"]?.string }
    func trackID() async throws -> ObjectPath? { try await metadata()["mpris:trackid"]?.objectPath }

    /// OpenUri with the file:// URI of `url`.
    func openURI(_ url: URL) async throws { try await call("OpenUri", [.string(MediaLibrary.uri(url))]) }

    /// Polls `property` (every 20 ms, up to `timeout`) until `condition` holds; returns the last value read.
    @discardableResult
    func waitForProperty(_ property: String, interface: String = MPRIS.player, timeout: Duration = .seconds(5),
                         _ condition: (DBusValue) -> Bool) async throws -> DBusValue {
        let deadline = ContinuousClock.now + timeout
        while true {
            let value = try await get(property, interface: interface)
            if condition(value) || ContinuousClock.now >= deadline { return value }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits for PlaybackStatus to be `status`; returns the last one read.
    @discardableResult
    func waitForStatus(_ status: String, timeout: Duration = .seconds(5)) async throws -> String? {
        try await waitForProperty("PlaybackStatus", timeout: timeout) { $0.string == status }.string
    }

    /// Waits for the current xesam:url to end with `suffix`, and returns it; throws when it does not in `timeout`.
    @discardableResult
    func waitForURL(endingWith suffix: String, timeout: Duration = .seconds(5)) async throws -> String? {
        // The suffix as written in the URI, or as a path ("/Part 3.mp3" for ".../Part%203.mp3").
        func matches(_ url: String?) -> Bool {
            guard let url else { return false }
            return url.hasSuffix(suffix) || (url.removingPercentEncoding ?? url).hasSuffix(suffix)
        }
        let metadata = try await waitForProperty("Metadata", timeout: timeout) {
            matches($0.stringKeyedDictionary?["xesam:url"]?.string)
        }
        let url = metadata.stringKeyedDictionary?["xesam:url"]?.string
        guard matches(url) else {
            throw FixtureError("the current file is \(url ?? "none"), not one ending with \(suffix), after \(timeout)")
        }
        return url
    }

    /// Waits until the engine reports a position of at least `microseconds` (i.e. the pipeline really plays), and
    /// returns it; throws when it does not in `timeout`.
    @discardableResult
    func waitForPosition(atLeast microseconds: Int64, timeout: Duration = .seconds(10)) async throws -> Int64 {
        let position = try await waitForProperty("Position", timeout: timeout) { ($0.int64 ?? -1) >= microseconds }.int64 ?? -1
        guard position >= microseconds else {
            throw FixtureError("the position is \(position) µs, not \(microseconds) or more, after \(timeout)")
        }
        return position
    }

    /// Opens `url`, pauses at once and waits for Paused: a deterministic place to start from.
    func openPaused(_ url: URL) async throws {
        try await openURI(url)
        try await call("Pause")
        let status = try await waitForStatus("Paused")
        guard status == "Paused" else { throw FixtureError("not Paused after open + Pause: \(status ?? "nil")") }
        try await waitForTracksDiscovered()
    }

    /// Waits until every track of the queue has its length (the daemon reads the files after the first in the
    /// background, and their durations change the book-level figures in Metadata), then for the signals.
    func waitForTracksDiscovered(timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let tracks = try await get("Tracks", interface: MPRIS.trackList).elements ?? []
            let metadata = try await call("GetTracksMetadata", [.array(.objectPath, tracks)], interface: MPRIS.trackList)
                .first?.elements ?? []
            if metadata.count == tracks.count, metadata.allSatisfy({ $0.stringKeyedDictionary?["mpris:length"] != nil }) {
                try await signals.barrier()
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw FixtureError("the queue's durations were not all known after \(timeout)")
    }

    // MARK: Tools

    /// Runs the real `/usr/bin/playerctl -p lectern ARGS` on the private bus; stdout without its last newline.
    func playerctl(_ arguments: String...) async throws -> ToolResult {
        let result = try await Subprocess.run("/usr/bin/playerctl", ["-p", "lectern"] + arguments, env: environment,
                                              timeout: .seconds(20))
        return (result.status, result.stdout.trimmingTrailingNewlines, result.stderr)
    }

    /// Runs the built `lectern` CLI on the private bus.
    func lectern(_ arguments: String...) async throws -> ToolResult {
        try await Self.runLectern(arguments, environment: environment)
    }

    static func runLectern(_ arguments: [String], environment: [String: String]) async throws -> ToolResult {
        let result = try await Subprocess.run(builtExecutable("lectern").path, arguments, env: environment,
                                              timeout: .seconds(20))
        return (result.status, result.stdout.trimmingTrailingNewlines, result.stderr)
    }
}

extension String {
    var trimmingTrailingNewlines: String {
        var s = self
        while s.hasSuffix("\n") { s.removeLast() }
        return s
    }
}

/// |a - b| <= tolerance, for µs positions.
func near(_ a: Int64?, _ b: Int64, within tolerance: Int64) -> Bool {
    guard let a else { return false }
    return abs(a - b) <= tolerance
}
