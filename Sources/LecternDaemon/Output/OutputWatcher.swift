import DBus
import Dispatch
import Foundation
import GStreamer
import LecternCore
import Logging
import PulseAudio

/// Watches the audio outputs and pauses (and later resumes) the player when the one in use goes away; publishes
/// `org.lectern.Output1` (dbus/org.lectern.Output1.xml) on Lectern's object.
///
/// Sources: libpulse (sinks new/changed/removed, ports becoming unavailable, the default sink, our own stream's
/// sink, the server dying) and GStreamer's device monitor (Audio/Sink added/removed), whichever reports first.
/// The output in use is the sink our stream (sink input with our `application.process.id`) plays to, else the
/// default sink. The decisions are ``OutputPolicy``'s; this type only feeds it and applies them to the ``Player``.
///
/// ```swift
/// let watcher = OutputWatcher(player: player, mode: .pauseAndResume, resumeWindow: .seconds(1800), logger: logger)
/// let object = try connection.export(path, interfaces: [watcher.makeInterface()])
/// await watcher.publish(on: object)
/// await watcher.run()          // until cancelled
/// ```
///
/// Everything mutable is isolated to the actor. Events are handled one at a time per source; the libpulse events
/// are taken in the server's order (the next one waits for the queries the previous one needed).
public actor OutputWatcher {
    public static let interfaceName = "org.lectern.Output1"

    /// The last route event, as `LastRouteEvent` and `RouteChanged` carry it.
    struct RouteEvent: Sendable, Equatable {
        enum Kind: String, Sendable {
            case none
            case outputLost = "output-lost"
            case outputReturned = "output-returned"
            case serverLost = "server-lost"
            case serverReturned = "server-returned"
        }
        enum Action: String, Sendable {
            case none, paused, resumed
        }
        var kind: Kind
        var output: String
        var port: String
        var action: Action
        /// Microseconds since the Unix epoch; 0 for `.none`.
        var time: Int64

        static let initial = RouteEvent(kind: .none, output: "", port: "", action: .none, time: 0)

        var value: DBusValue {
            .structure([.string(kind.rawValue), .string(output), .string(port), .string(action.rawValue), .int64(time)])
        }
        static let type = DBusType.structure([.string, .string, .string, .string, .int64])
    }

    private let player: Player
    private let logger: Logger
    /// Called after a lost output paused playback (not the sound server's death): e.g. an automatic bookmark.
    private let pausedForLoss: @Sendable () async -> Void
    private let client: PulseClient
    private let processID = getpid()
    private var policy: OutputPolicy<ContinuousClock.Instant>
    private var object: ExportedObject?

    // The sound server as last seen (empty while disconnected).
    private var connected = false
    private var sinks: [UInt32: PulseSink] = [:]
    /// Whether `sinks` holds the server's list (false until it was read on connecting, or when reading it failed).
    private var sinksListed = false
    private var defaultSink: String?
    /// Our playback stream, if we have one.
    private var stream: PulseSinkInput?
    private var currentOutput = ""
    private var lastEvent = RouteEvent.initial
    private var wasDisconnected = false

    private var monitor: DeviceMonitor?
    private let deviceChanges: AsyncStream<DeviceChange>
    private let deviceContinuation: AsyncStream<DeviceChange>.Continuation
    /// Starting and stopping the device monitor block for a moment: done here, not on the cooperative pool.
    private static let monitorQueue = DispatchQueue(label: "lectern.output.devices")

    public init(player: Player, mode: OutputPolicyMode = .pauseAndResume, resumeWindow: Duration = .seconds(30 * 60),
                server: String? = nil, logger: Logger, pausedForLoss: @escaping @Sendable () async -> Void = {}) {
        self.player = player
        self.pausedForLoss = pausedForLoss
        self.logger = logger
        self.policy = OutputPolicy(mode: mode, resumeWindow: resumeWindow)
        self.client = PulseClient(server: server, applicationName: "lecternd output watcher")
        (deviceChanges, deviceContinuation) = AsyncStream.makeStream(of: DeviceChange.self, bufferingPolicy: .unbounded)
    }

    // MARK: - D-Bus

    /// `org.lectern.Output1`, for Lectern's object; its setters call this watcher.
    public nonisolated func makeInterface() -> Interface {
        Interface(Self.interfaceName,
            properties: [
                Property("CurrentOutput", .string),
                Property("ServerConnected", .boolean),
                Property("LastRouteEvent", RouteEvent.type),
                Property("Policy", .string, access: .readwrite, set: { [weak self] value in
                    guard let text = value.string, let mode = OutputPolicyMode(rawValue: text) else {
                        let modes = OutputPolicyMode.allCases.map(\.rawValue).joined(separator: ", ")
                        throw BusError.invalidArgs("Policy must be one of \(modes), not \(value)")
                    }
                    await self?.setMode(mode)
                }),
                Property("ResumeWindow", .uint32, access: .readwrite, set: { [weak self] value in
                    guard case .uint32(let seconds) = value.unwrapped else { throw BusError.invalidArgs("ResumeWindow is in seconds (u)") }
                    await self?.setResumeWindow(.seconds(Int64(seconds)))
                }),
            ],
            signals: [SignalDecl("RouteChanged", [("event", RouteEvent.type)])])
    }

    /// Stores the initial values on `object` and keeps them up to date from now on.
    public func publish(on object: ExportedObject) {
        self.object = object
        object.update(Self.interfaceName, [
            "CurrentOutput": .string(currentOutput),
            "ServerConnected": .boolean(connected),
            "LastRouteEvent": lastEvent.value,
            "Policy": .string(policy.mode.rawValue),
            "ResumeWindow": .uint32(UInt32(clamping: policy.resumeWindow.components.seconds)),
        ])
    }

    func setMode(_ mode: OutputPolicyMode) {
        policy.mode = mode
        object?.update(Self.interfaceName, ["Policy": .string(mode.rawValue)])
    }

    func setResumeWindow(_ window: Duration) {
        policy.resumeWindow = window
        object?.update(Self.interfaceName, ["ResumeWindow": .uint32(UInt32(clamping: window.components.seconds))])
    }

    // MARK: - Running

    /// Connects to the sound server (again and again, with backoff, if it isn't there or goes away) and handles
    /// route changes until cancelled.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [client] in
                await client.run { [weak self] event in await self?.handle(event) }
            }
            group.addTask { [deviceChanges] in
                for await change in deviceChanges { await self.handle(change) }
            }
            await group.next()
            group.cancelAll()
        }
        await stopDeviceMonitor()
    }

    private func handle(_ event: PulseClient.Event) async {
        switch event {
        case .connectFailed(let reason, let attempt):
            if attempt == 1 {
                logger.info("PulseAudio is not reachable; route changes are not watched until it is (retrying in the background)",
                            metadata: ["error": "\(reason)"])
            } else {
                logger.debug("PulseAudio still not reachable", metadata: ["attempt": "\(attempt)", "error": "\(reason)"])
            }
        case .connected(let info):
            await serverConnected(info)
        case .disconnected(let reason):
            await serverLost(reason)
        case .object(let change):
            await objectChanged(change)
        }
    }

    private func handle(_ change: DeviceChange) async {
        switch change {
        case .removed(let device):
            guard let name = device.internalName, connected, name == currentOutput else { return }
            await outputLost(name, port: "", reason: .removed, seenBy: "device monitor")
        case .added(let device):
            guard let name = device.internalName, connected else { return }
            await outputAppeared(name)
        }
    }

    // MARK: - The sound server

    private func serverConnected(_ info: PulseServerInfo) async {
        guard let connection = client.connection else { return }
        connected = true
        defaultSink = info.defaultSinkName
        do {
            sinks = Dictionary(try await connection.sinks().map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
            sinksListed = true
            stream = try await connection.sinkInputs(ofProcess: processID).last
        } catch {
            logger.warning("cannot list PulseAudio sinks", metadata: ["error": "\(error)"])
        }
        object?.update(Self.interfaceName, ["ServerConnected": .boolean(true)])
        updateCurrentOutput()
        logger.info("PulseAudio connected", metadata: ["server": "\(info.serverName) \(info.serverVersion)",
                                                       "output": "\(currentOutput)"])
        await startDeviceMonitor()
        if wasDisconnected {
            wasDisconnected = false
            await serverReturned()
        }
    }

    private func serverLost(_ reason: String) async {
        let previous = currentOutput
        connected = false
        wasDisconnected = true
        sinks = [:]
        sinksListed = false
        stream = nil
        defaultSink = nil
        updateCurrentOutput()
        object?.update(Self.interfaceName, ["ServerConnected": .boolean(false)])

        // pulsesink may have failed with the server before we heard of it: the player paused itself then, keeping
        // its place, as for an unplug (lastError says it was the engine, not an earlier unplug of ours).
        let snapshot = await player.snapshot
        let pausedForLostOutput = await player.isPausedForLostOutput
        let pausedByEngine = snapshot.status == .paused && snapshot.lastError != nil && pausedForLostOutput
        let playing = snapshot.status == .playing
        let decision = policy.handle(.lost(output: previous, reason: .serverLost, playing: playing || pausedByEngine),
                                     at: .now)
        var action = RouteEvent.Action.none
        if decision == .pause {
            if pausedByEngine {
                action = .paused
            } else if await player.pauseForLostOutput() {
                action = .paused
            } else {
                policy.forget()
            }
        }
        logger.warning("PulseAudio connection lost; reconnecting in the background",
                       metadata: ["error": "\(reason)", "action": "\(action.rawValue)"])
        record(.serverLost, output: previous, action: action)
        await stopDeviceMonitor()
    }

    /// The server is back: the player, paused by the loss and untouched since, resumes when the policy says so (it
    /// loads the file again: the pipeline failed with the server), on the output it played to, once that is there.
    /// A server that has just started may not have loaded that sink yet (its socket comes first): resuming then
    /// failed to open the output ("missing a plug-in" from playsink); its arrival resumes instead.
    private func serverReturned() async {
        let untouched = await player.isPausedForLostOutput
        let lost = policy.pending?.output ?? ""
        // Not knowing the sinks (listing them failed), resume as before that check: a missing output fails again.
        let present = lost.isEmpty || !sinksListed || sinks.values.contains { $0.name == lost }
        let decision = policy.handle(.serverReturned(outputPresent: present, untouched: untouched), at: .now)
        var action = RouteEvent.Action.none
        if decision == .resume, await player.resumeForReturnedOutput() {
            action = .resumed
        }
        record(.serverReturned, output: currentOutput, action: action)
    }

    // MARK: - Sinks and streams

    private func objectChanged(_ change: PulseObjectEvent) async {
        guard let connection = client.connection else { return }
        do {
            switch (change.facility, change.change) {
            case (.sink, .remove):
                guard let gone = sinks.removeValue(forKey: change.index) else { return }
                if gone.name == currentOutput {
                    await outputLost(gone.name, port: gone.activePort ?? "", reason: .removed, seenBy: "sink removed")
                }
                updateCurrentOutput()
            case (.sink, _):
                guard let sink = try await connection.sink(index: change.index) else { return }
                let old = sinks.updateValue(sink, forKey: change.index)
                if old == nil {
                    await outputAppeared(sink.name)
                } else if let old {
                    await portsChanged(from: old, to: sink)
                }
                updateCurrentOutput()
            case (.sinkInput, .remove):
                guard stream?.index == change.index else { return }
                stream = nil
                updateCurrentOutput()
            case (.sinkInput, _):
                let mine = try await connection.sinkInputs(ofProcess: processID)
                guard let new = mine.first(where: { $0.index == change.index }) ?? mine.last else { return }
                let before = stream.flatMap { sinks[$0.sinkIndex] }
                stream = new
                if let before, before.index != new.sinkIndex, try await connection.sink(index: before.index) == nil {
                    // The server moved our stream because its sink went away (the removal event may come later).
                    sinks[before.index] = nil
                    if before.name == currentOutput {
                        await outputLost(before.name, port: before.activePort ?? "", reason: .removed, seenBy: "stream moved")
                    }
                }
                updateCurrentOutput()
            case (.server, _):
                defaultSink = try await connection.serverInfo().defaultSinkName
                updateCurrentOutput()
            }
        } catch {
            logger.debug("PulseAudio query failed", metadata: ["error": "\(error)"])
        }
    }

    /// A jack: the active port of the output in use became unavailable, or a port we lost came back.
    private func portsChanged(from old: PulseSink, to new: PulseSink) async {
        let change = new.jackChanges(since: old)
        if new.name == currentOutput, let port = change.unplugged {
            await outputLost(new.name, port: port, reason: .portUnavailable, seenBy: "port unavailable")
            return
        }
        for port in change.pluggedIn {
            await outputAppeared(Self.outputID(sink: new.name, port: port), sink: new.name, port: port)
        }
    }

    /// How the policy names an output: the sink, or the sink and port for a jack.
    static func outputID(sink: String, port: String) -> String { port.isEmpty ? sink : "\(sink)#\(port)" }

    private func outputLost(_ sink: String, port: String, reason: OutputPolicy<ContinuousClock.Instant>.LossReason,
                            seenBy source: String) async {
        let output = reason == .portUnavailable ? Self.outputID(sink: sink, port: port) : sink
        let playing = await player.snapshot.status == .playing
        let decision = policy.handle(.lost(output: output, reason: reason, playing: playing), at: .now)
        guard decision == .pause else { return }
        var action = RouteEvent.Action.none
        if await player.pauseForLostOutput() {
            action = .paused
        } else {
            policy.forget()
        }
        logger.info("output lost", metadata: ["sink": "\(sink)", "port": "\(port)", "action": "\(action.rawValue)",
                                              "seen-by": "\(source)"])
        record(.outputLost, output: sink, port: port, action: action)
        if action == .paused { await pausedForLoss() }
    }

    /// An output appeared: if it is the one whose loss paused us, maybe resume (on it).
    private func outputAppeared(_ output: String, sink: String? = nil, port: String = "") async {
        guard let pending = policy.pending, pending.output == output, pending.reason != .serverLost else { return }
        let sinkName = sink ?? output
        let decision = policy.handle(.returned(output: output, untouched: await player.isPausedForLostOutput), at: .now)
        var action = RouteEvent.Action.none
        if decision == .resume {
            // The server moved our stream elsewhere when the sink went: send it back before playing.
            if let stream, sinks[stream.sinkIndex]?.name != sinkName, let connection = client.connection {
                do {
                    try await connection.moveSinkInput(stream.index, toSink: sinkName)
                } catch {
                    logger.warning("cannot move the stream back", metadata: ["sink": "\(sinkName)", "error": "\(error)"])
                }
            }
            if await player.resumeForReturnedOutput() { action = .resumed }
        }
        logger.info("output returned", metadata: ["sink": "\(sinkName)", "port": "\(port)", "action": "\(action.rawValue)"])
        record(.outputReturned, output: sinkName, port: port, action: action)
    }

    private func updateCurrentOutput() {
        let name = connected ? (stream.flatMap { sinks[$0.sinkIndex]?.name } ?? defaultSink ?? "") : ""
        guard name != currentOutput else { return }
        currentOutput = name
        object?.update(Self.interfaceName, ["CurrentOutput": .string(name)])
    }

    private func record(_ kind: RouteEvent.Kind, output: String, port: String = "", action: RouteEvent.Action) {
        let now = Date().timeIntervalSince1970
        lastEvent = RouteEvent(kind: kind, output: output, port: port, action: action, time: Int64(now * 1_000_000))
        object?.update(Self.interfaceName, ["LastRouteEvent": lastEvent.value])
        try? object?.emit(Self.interfaceName, "RouteChanged", [lastEvent.value])
    }

    // MARK: - Device monitor

    private func startDeviceMonitor() async {
        await stopDeviceMonitor()
        let continuation = deviceContinuation
        let logger = logger
        monitor = await withCheckedContinuation { (done: CheckedContinuation<DeviceMonitor?, Never>) in
            Self.monitorQueue.async {
                do {
                    done.resume(returning: try DeviceMonitor(classes: "Audio/Sink") { continuation.yield($0) })
                } catch {
                    logger.info("no GStreamer device monitor for audio sinks", metadata: ["error": "\(error)"])
                    done.resume(returning: nil)
                }
            }
        }
    }

    private func stopDeviceMonitor() async {
        guard let monitor else { return }
        self.monitor = nil
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Self.monitorQueue.async {
                monitor.stop()
                done.resume()
            }
        }
    }
}
