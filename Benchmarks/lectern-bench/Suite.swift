import CDBus
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Settings of one run.
struct Settings {
    var roundTrips = 5000
    var warmup = 500
    var signalIterations = 100
    /// Between two PlayPause or Seek calls: 20 ms plus a random 0–200 ms, so that a player that batches its signals
    /// on a periodic timer (mpv, VLC) is met at every point of its period, not always at the same one.
    var signalPause: Duration = .milliseconds(20)
    var signalPauseJitterMs = 200
    var startupRuns = 5
    var playSettle: Duration = .seconds(5)
    var cpuWindow: Duration = .seconds(10)
    var idleCPUWindow: Duration = .seconds(5)
    var concurrency: [Int] = [8, 32]
    var concurrencyWindow: Duration = .seconds(5)
    /// Where the CPU-into-PulseAudio row plays (nil: not measured).
    var soundServer: SoundServer?
    /// Less CPU than this while "playing" (% of one core, schedstat) means the player decoded nothing.
    var decodingCPUFloor = 0.3
}

/// Everything measured for one player.
struct PlayerResult {
    var label = ""
    /// The command line it was started idle with.
    var command = ""
    var loading = PlayerKind.Loading.openURI
    var busName = ""
    var startupMs: [Double] = []
    var coldStartupMs: Double = .nan
    var shutdownMs: [Double] = []
    var shutdownStatuses: [Int32?] = []
    var idleRSSKB = 0, idleHWMKB = 0
    var idleRollup: ProcStats.Rollup?
    var idleCPU: CPUWindow.Result?
    var openToPlayingMs: Double = .nan
    var playRSSKB = 0, playHWMKB = 0
    var playRollup: ProcStats.Rollup?
    /// The VmRSS of the player's child processes at the same moment (lecternd's media reader, while it stays).
    var playChildrenRSSKB = 0
    var playCPU: CPUWindow.Result?
    /// Playing into PulseAudio (`measureIntoSoundServer`): the player's CPU and the server's meanwhile, plain and, for
    /// Lectern, with its sound settings on one after the other.
    var intoSoundServer: IntoSoundServer?
    var threads = 0
    var pingBus = Samples([]), pingPlayer = Samples([]), get = Samples([]), getAll = Samples([])
    /// Get answered by the minimal libdbus responder in the bench process: the two-hop floor.
    var echoGet = Samples([])
    var roundTripErrors = 0
    var playPause = Samples([]), seek = Samples([])
    var playPauseMissed = 0, seekMissed = 0
    var concurrency: [ConcurrencyResult] = []
    var endRSSKB = 0, endHWMKB = 0
    var notes: [String] = []
}

struct ConcurrencyResult {
    let clients: Int
    let seconds: Double
    let calls: Int
    let errors: Int
    let connectFailures: Int
    let latency: Samples
    let playerCPU: CPUWindow.Result
    let busCPU: CPUWindow.Result
    var callsPerSecond: Double { Double(calls) / seconds }
    /// Player CPU per call in µs (schedstat, ns resolution).
    var playerMicrosPerCall: Double { playerCPU.schedCPUSeconds * 1e6 / Double(max(calls, 1)) }
    var busMicrosPerCall: Double { busCPU.schedCPUSeconds * 1e6 / Double(max(calls, 1)) }
}

func progress(_ text: String) {
    FileHandle.standardError.write(Data("[bench] \(text)\n".utf8))
}

/// Runs every measurement for one player on a bus of its own.
func measure(_ kind: PlayerKind, audio: URL, settings: Settings, work: TemporaryDirectory) throws -> PlayerResult {
    var result = PlayerResult()
    result.label = kind.label
    let idle = kind.command(nil, .timedNull)
    result.command = shellLine([idle.executable] + idle.arguments)
    result.loading = kind.loading
    let bus = try PrivateBus()
    defer { bus.stop() }
    let environment = try playerEnvironment(kind, bus: bus, work: work)
    let client = try BusClient(address: bus.address)
    try watchNames(client)
    let log = work.appending("\(kind.label)-\(ProcessInfo.processInfo.processIdentifier).log")

    // 5. Start-up: one untimed (cold) run, then `startupRuns` timed ones, each stopped with SIGTERM.
    progress("\(kind.label): start-up x\(settings.startupRuns + 1)")
    for run in 0...settings.startupRuns {
        let player = try launch(kind, file: nil, bus: bus, environment: environment, client: client, log: log)
        let ms = Double(player.startupNs) / 1e6
        if run == 0 { result.coldStartupMs = ms } else { result.startupMs.append(ms) }
        sleepFor(.milliseconds(300))  // let it finish starting before asking it to stop
        let (status, stopMs) = player.stop()
        result.shutdownMs.append(stopMs)
        result.shutdownStatuses.append(status)
        sleepFor(.milliseconds(100))
    }

    // 3./4. Idle: nothing loaded.
    progress("\(kind.label): idle memory and CPU")
    var player = try launch(kind, file: nil, bus: bus, environment: environment, client: client, log: log)
    result.busName = player.busName
    sleepFor(.seconds(2))
    if let m = ProcStats.memory(player.pid) { (result.idleRSSKB, result.idleHWMKB) = (m.rssKB, m.hwmKB) }
    result.idleRollup = ProcStats.rollup(player.pid)
    let idleWindow = CPUWindow(player.pid)
    sleepFor(settings.idleCPUWindow)
    result.idleCPU = idleWindow.finish()

    // Playing: Lectern and VLC open the file over D-Bus; mpv is restarted with the file on its command line.
    progress("\(kind.label): open and play \(audio.lastPathComponent)")
    if kind.loading == .libraryBook { try importBook(audio, in: player, client: client) }
    let openStart = ContinuousClock.now
    switch kind.loading {
    case .openURI:
        try openURI(audio, in: player, client: client)
    case .libraryBook:
        try activateBook(in: player, client: client)
    case .commandLine:
        _ = player.stop()
        player = try launch(kind, file: audio, bus: bus, environment: environment, client: client, log: log)
    }
    defer { _ = player.stop() }
    guard waitForStatus(client, player, "Playing", timeout: .seconds(10)) else {
        throw BenchFailure("\(kind.label) is not Playing 10 s after loading \(audio.path):\n\(player.logTail)")
    }
    let playingSince = ContinuousClock.now
    result.openToPlayingMs = Double((playingSince - openStart).components.attoseconds) / 1e15
        + Double((playingSince - openStart).components.seconds) * 1e3
    let player1 = "org.mpris.MediaPlayer2.Player"
    let startPosition = try? client.getInt64Property(player.busName, interface: player1, "Position")
    let rest = settings.playSettle - (ContinuousClock.now - playingSince)
    if rest > .zero { sleepFor(rest) }
    // A player that says Playing but does not play (VLC has: Playing 1 ms after OpenUri, 13 MB)
    // would make its figures look good: its Position must have moved with the clock.
    if let start = startPosition ?? nil,
       let end = (try? client.getInt64Property(player.busName, interface: player1, "Position")) ?? nil {
        let elapsed = Double((ContinuousClock.now - playingSince).components.seconds)
            + Double((ContinuousClock.now - playingSince).components.attoseconds) / 1e18
        let moved = Double(end - start) / 1e6
        if moved < elapsed / 2 {
            result.notes.append(String(format: "%@ said Playing, but its Position moved %.1f s in %.1f s: its playing "
                + "figures (memory, CPU, signals) are not those of a player playing", kind.label, moved, elapsed))
        }
    }
    if let m = ProcStats.memory(player.pid) { (result.playRSSKB, result.playHWMKB) = (m.rssKB, m.hwmKB) }
    result.playRollup = ProcStats.rollup(player.pid)
    result.playChildrenRSSKB = ProcStats.children(player.pid).compactMap { ProcStats.memory($0)?.rssKB }.reduce(0, +)
    progress("\(kind.label): CPU while playing, \(settings.cpuWindow)")
    let playWindow = CPUWindow(player.pid)
    sleepFor(settings.cpuWindow)
    result.playCPU = playWindow.finish()
    result.threads = ProcStats.threadCount(player.pid)
    // VLC can also move its Position and decode nothing (about 13 MB instead of 36): decoding and pacing this file
    // costs every player measured here 1 % of a core or more (gst-launch playbin alone 1.3 %), so far less is none.
    if let cpu = result.playCPU, cpu.schedPercent < settings.decodingCPUFloor {
        result.notes.append(String(format: "%@ said Playing, but used %.2f %% of a core while playing (decoding costs 1 %% "
            + "or more): it did not decode, and its playing figures (memory, CPU, signals) do not count", kind.label,
            cpu.schedPercent))
    }

    // 1. Round trips: warm-up for each kind of call, then the kinds in rotation, in blocks, so that a drift of
    // the machine over the run (the players keep playing) touches every series alike.
    progress("\(kind.label): round trips, \(settings.warmup) + \(settings.roundTrips) each, interleaved")
    let name = player.busName
    let path = "/org/mpris/MediaPlayer2"
    let playerInterface = "org.mpris.MediaPlayer2.Player"
    let echo: Subprocess?
    do { echo = try EchoResponder.start(address: bus.address, environment: environment) } catch {
        echo = nil
        result.notes.append("\(error)")
    }
    defer {
        echo?.kill()
        _ = echo?.waitForExit(timeout: .seconds(5))
    }
    var makers: [() -> OpaquePointer] = [
        { BusClient.methodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping") },
        { BusClient.methodCall(name, path, "org.freedesktop.DBus.Peer", "Ping") },
        { BusClient.methodCall(name, path, "org.freedesktop.DBus.Properties", "Get",
                               [.string(playerInterface), .string("PlaybackStatus")]) },
        { BusClient.methodCall(name, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(playerInterface)]) },
    ]
    if echo != nil {
        makers.append({ BusClient.methodCall(EchoResponder.name, path, "org.freedesktop.DBus.Properties", "Get",
                                             [.string(playerInterface), .string("PlaybackStatus")]) })
    }
    var errors = 0
    var values = [[UInt64]](repeating: [], count: makers.count)
    for (index, make) in makers.enumerated() {
        values[index].reserveCapacity(settings.roundTrips)
        for _ in 0..<settings.warmup where !client.timedCall(make()).ok { errors += 1 }
    }
    let blocks = 10
    for block in 0..<blocks {
        let size = settings.roundTrips / blocks + (block < settings.roundTrips % blocks ? 1 : 0)
        for (index, make) in makers.enumerated() {
            for _ in 0..<size {
                let (ns, ok) = client.timedCall(make())
                if !ok { errors += 1 }
                values[index].append(ns)
            }
        }
    }
    result.pingBus = Samples(values[0])
    result.pingPlayer = Samples(values[1])
    result.get = Samples(values[2])
    result.getAll = Samples(values[3])
    if echo != nil { result.echoGet = Samples(values[4]) }
    result.roundTripErrors = errors

    // 2. PlayPause -> PropertiesChanged(PlaybackStatus), Seek -> Seeked.
    progress("\(kind.label): PlayPause -> PropertiesChanged, Seek -> Seeked, \(settings.signalIterations) each")
    let changedRule = "type='signal',sender='\(player.owner)',path='\(path)',"
        + "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"
    try client.addMatch(changedRule)
    var status = "Playing"
    var latencies: [UInt64] = []
    for i in 0..<(settings.signalIterations + 4) {
        let expected = status == "Playing" ? "Paused" : "Playing"
        client.drain()
        let start = DispatchTime.now().uptimeNanoseconds
        client.send(BusClient.methodCall(name, path, playerInterface, "PlayPause"))
        let arrived = client.waitFor(timeout: .seconds(2)) { message in
            let reader = MessageReader(message)
            return reader.isSignal("org.freedesktop.DBus.Properties", "PropertiesChanged")
                && reader.changedString("PlaybackStatus") == expected
        }
        if let arrived {
            if i >= 4 { latencies.append(arrived - start) }
            status = expected
        } else {
            result.playPauseMissed += 1
            status = (try? client.getProperty(name, interface: playerInterface, "PlaybackStatus")) ?? status
        }
        sleepFor(settings.signalPause + .milliseconds(Int.random(in: 0..<settings.signalPauseJitterMs)))
    }
    result.playPause = Samples(latencies)
    client.removeMatch(changedRule)
    if status != "Playing" {
        client.send(BusClient.methodCall(name, path, playerInterface, "Play"))
        _ = waitForStatus(client, player, "Playing", timeout: .seconds(5))
    }

    let seekedRule = "type='signal',sender='\(player.owner)',path='\(path)',interface='\(playerInterface)',member='Seeked'"
    try client.addMatch(seekedRule)
    latencies = []
    for i in 0..<(settings.signalIterations + 4) {
        client.drain()
        let offset: Int64 = i % 2 == 0 ? 1_000_000 : -1_000_000
        let start = DispatchTime.now().uptimeNanoseconds
        client.send(BusClient.methodCall(name, path, playerInterface, "Seek", [.int64(offset)]))
        let arrived = client.waitFor(timeout: .seconds(2)) { MessageReader($0).isSignal(playerInterface, "Seeked") }
        if let arrived {
            if i >= 4 { latencies.append(arrived - start) }
        } else {
            result.seekMissed += 1
        }
        sleepFor(settings.signalPause + .milliseconds(Int.random(in: 0..<settings.signalPauseJitterMs)))
    }
    result.seek = Samples(latencies)
    client.removeMatch(seekedRule)

    // 6. Concurrent clients.
    for clients in settings.concurrency {
        progress("\(kind.label): \(clients) concurrent clients calling Get for \(settings.concurrencyWindow)")
        result.concurrency.append(concurrentGets(address: bus.address, destination: name, clients: clients,
                                                 window: settings.concurrencyWindow, playerPID: player.pid,
                                                 busPID: bus.pid))
    }
    if let m = ProcStats.memory(player.pid) { (result.endRSSKB, result.endHWMKB) = (m.rssKB, m.hwmKB) }
    if !player.process.isRunning { result.notes.append("\(kind.label) exited during the run:\n\(player.logTail)") }
    return result
}

/// The environment a player runs in: its bus's, `extra`, and a HOME of its own (created) when it wants one.
func playerEnvironment(_ kind: PlayerKind, bus: PrivateBus, work: TemporaryDirectory,
                       adding extra: [String: String] = [:]) throws -> [String: String] {
    var environment = bus.environment.merging(extra) { $1 }
    if kind.ownHome {
        let home = work.appending("\(kind.key)-home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        environment["HOME"] = home.path
    }
    return environment
}

/// Calls `member` on the player and throws its D-Bus error, if the reply is one.
private func callOrThrow(_ client: BusClient, _ player: RunningPlayer, _ path: String, _ interface: String,
                         _ member: String, _ arguments: [BusClient.Argument]) throws {
    let reply = try client.call(BusClient.methodCall(player.busName, path, interface, member, arguments))
    let error = dbus_message_get_type(reply) == 3 ? MessageReader(reply).strings().first ?? "?" : nil
    dbus_message_unref(reply)
    if let error { throw BenchFailure("\(member) failed: \(error)") }
}

/// OpenUri(file://…) on a running player; throws its D-Bus error.
func openURI(_ audio: URL, in player: RunningPlayer, client: BusClient) throws {
    try callOrThrow(client, player, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "OpenUri",
                    [.string(audio.absoluteString)])
}

/// Imports `audio` into the player's library (Lectern's Import) and waits for ImportFinished.
func importBook(_ audio: URL, in player: RunningPlayer, client: BusClient) throws {
    let rule = "type='signal',interface='org.lectern.Library1',member='ImportFinished'"
    try client.addMatch(rule)
    defer { client.removeMatch(rule) }
    try callOrThrow(client, player, "/org/lectern/Lectern1", "org.lectern.Library1", "Import",
                    [.string(audio.path), .string("")])
    var outcome: (books: Int, error: String)?
    _ = client.waitFor(timeout: .seconds(60)) { message in
        guard let finished = MessageReader(message).importFinished() else { return false }
        outcome = (finished.books, finished.error)
        return true
    }
    guard let outcome else { throw BenchFailure("no ImportFinished within 60 s") }
    guard outcome.books == 1, outcome.error.isEmpty else {
        throw BenchFailure("Import of \(audio.path): \(outcome.books) books, error \(outcome.error)")
    }
}

/// Plays the library's book (the bench's libraries hold one: id 1) from its saved position.
func activateBook(in player: RunningPlayer, client: BusClient) throws {
    try callOrThrow(client, player, "/org/lectern/Lectern1", "org.lectern.Library1", "ActivateBook",
                    [.int64(1), .bool(true)])
}

/// The player's CPU and the sound server's over one window.
struct CPUPair {
    var player: CPUWindow.Result
    var server: CPUWindow.Result
}

/// The windows of `measureIntoSoundServer`, one after the other in the same process.
struct IntoSoundServer {
    var plain: CPUPair
    /// Lectern's book at volume 2 and normalised (the gain stage and limiter at work).
    var boosted: CPUPair?
    /// The same with the speech compressor on as well.
    var compressed: CPUPair?
    /// The same with skip silence on as well (its default threshold and amount).
    var skippingSilence: CPUPair?
}

/// CPU while playing into a sound server (`SoundServer`: PulseAudio, null sink): the player started on a bus of
/// its own with its PulseAudio output, the file played, then the player's CPU and the server's over the same
/// window. The server's share matters: a player that sends its audio as it is decoded (44.1 kHz mono here) leaves
/// the conversion to the server, one that converts first does it itself. With `withSettings`, Lectern's book is then
/// boosted (volume 2) and normalised (its loudness measured first) while it plays, and a second window measured; then
/// its speech compressor is turned on as well, a third; then skip silence as well, a fourth.
func measureIntoSoundServer(_ kind: PlayerKind, server: SoundServer, audio: URL, settings: Settings,
                            work: TemporaryDirectory, withSettings: Bool = false) throws -> IntoSoundServer {
    progress("\(kind.label): CPU while playing into PulseAudio, \(settings.cpuWindow)")
    let bus = try PrivateBus()
    defer { bus.stop() }
    let environment = try playerEnvironment(kind, bus: bus, work: work, adding: server.environment)
    let client = try BusClient(address: bus.address)
    try watchNames(client)
    let log = work.appending("\(kind.label)-pulse.log")
    let player = try launch(kind, file: kind.loading == .commandLine ? audio : nil, output: .pulse, bus: bus,
                            environment: environment, client: client, log: log)
    defer { _ = player.stop() }
    switch kind.loading {
    case .openURI: try openURI(audio, in: player, client: client)
    case .libraryBook:
        try importBook(audio, in: player, client: client)
        try activateBook(in: player, client: client)
    case .commandLine: break
    }
    guard waitForStatus(client, player, "Playing", timeout: .seconds(10)) else {
        throw BenchFailure("\(kind.label) is not Playing into PulseAudio 10 s after loading:\n\(player.logTail)")
    }
    sleepFor(settings.playSettle)
    func window() -> CPUPair {
        let playerWindow = CPUWindow(player.pid), serverWindow = CPUWindow(server.process.pid)
        sleepFor(settings.cpuWindow)
        return CPUPair(player: playerWindow.finish(), server: serverWindow.finish())
    }
    func windowAfter(_ change: [(String, BusClient.Variant)]) throws -> CPUPair {
        try callOrThrow(client, player, "/org/lectern/Lectern1", "org.lectern.Library1", "SetBookSettings",
                        [.int64(1), .vardict(change)])
        sleepFor(settings.playSettle)
        return window()
    }
    var result = IntoSoundServer(plain: window())
    guard withSettings, kind.loading == .libraryBook else { return result }
    try boostAndNormalise(in: player, client: client)
    sleepFor(settings.playSettle)
    result.boosted = window()
    result.compressed = try windowAfter([("compress", .bool(true))])
    result.skippingSilence = try windowAfter([("skip_silence", .bool(true))])
    return result
}

/// Sets the bench's book (id 1) to volume 2 with normalisation on, and waits until its loudness is measured (the
/// second BookChanged: the first is the settings').
func boostAndNormalise(in player: RunningPlayer, client: BusClient) throws {
    let rule = "type='signal',interface='org.lectern.Library1',member='BookChanged'"
    try client.addMatch(rule)
    defer { client.removeMatch(rule) }
    try callOrThrow(client, player, "/org/lectern/Lectern1", "org.lectern.Library1", "SetBookSettings",
                    [.int64(1), .vardict([("volume", .double(2)), ("normalise", .bool(true))])])
    var changes = 0
    _ = client.waitFor(timeout: .seconds(60)) { message in
        if MessageReader(message).isSignal("org.lectern.Library1", "BookChanged") { changes += 1 }
        return changes == 2
    }
    guard changes == 2 else { throw BenchFailure("the book's loudness was not measured within 60 s") }
}

/// Shared state of one concurrency run. Each thread owns its connection; only this box is shared.
private final class ConcurrencyBox: @unchecked Sendable {
    let lock = NSLock()
    let ready = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    var deadline: UInt64 = 0
    var latencies: [UInt64] = []
    var calls = 0
    var errors = 0
    var connectFailures = 0
}

func concurrentGets(address: String, destination: String, clients: Int, window: Duration, playerPID: pid_t,
                    busPID: pid_t) -> ConcurrencyResult {
    let box = ConcurrencyBox()
    for index in 0..<clients {
        let thread = Thread {
            let client = try? BusClient(address: address)
            box.ready.signal()
            box.go.wait()
            guard let client else {
                box.lock.withLock { box.connectFailures += 1 }
                box.done.signal()
                return
            }
            let deadline = box.lock.withLock { box.deadline }
            var local: [UInt64] = []
            local.reserveCapacity(100_000)
            var errors = 0
            while DispatchTime.now().uptimeNanoseconds < deadline {
                let message = BusClient.methodCall(destination, "/org/mpris/MediaPlayer2",
                                                   "org.freedesktop.DBus.Properties", "Get",
                                                   [.string("org.mpris.MediaPlayer2.Player"), .string("PlaybackStatus")])
                let (ns, ok) = client.timedCall(message, timeoutMs: 5000)
                local.append(ns)
                if !ok { errors += 1 }
            }
            box.lock.withLock {
                box.latencies += local
                box.calls += local.count
                box.errors += errors
            }
            box.done.signal()
        }
        thread.name = "bench-client-\(index)"
        thread.start()
    }
    for _ in 0..<clients { box.ready.wait() }
    let playerCPU = CPUWindow(playerPID)
    let busCPU = CPUWindow(busPID)
    let start = DispatchTime.now().uptimeNanoseconds
    let windowNs = UInt64(window.components.seconds) * 1_000_000_000 + UInt64(window.components.attoseconds / 1_000_000_000)
    box.lock.withLock { box.deadline = start + windowNs }
    for _ in 0..<clients { box.go.signal() }
    for _ in 0..<clients { box.done.wait() }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let playerResult = playerCPU.finish()
    let busResult = busCPU.finish()
    return box.lock.withLock {
        ConcurrencyResult(clients: clients, seconds: seconds, calls: box.calls, errors: box.errors,
                          connectFailures: box.connectFailures, latency: Samples(box.latencies),
                          playerCPU: playerResult, busCPU: busResult)
    }
}
