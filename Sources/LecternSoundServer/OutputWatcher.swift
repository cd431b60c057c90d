import Foundation
import LecternCore
import Logging
import PulseAudio
import Synchronization

/// Watches the audio outputs and pauses (and later resumes) the player when the one in use goes away; tells its
/// observer (the daemon publishes it as `org.lectern.Output1`) what it sees and did, with what the player did when another
/// sound asked for the output (a call: ``InterruptionNews``, from the player, which hears the server's cork requests
/// through its engine) and the mode it does it in.
///
/// Its one source is libpulse, on PulseAudio and on PipeWire's pipewire-pulse alike: sinks new, changed and removed,
/// ports becoming unavailable (a jack), the default sink, our own stream's sink, the server dying. (GStreamer's
/// device monitor heard sink removals within a millisecond of it, sees no ports, and its PipeWire provider
/// corrupts the heap when started and stopped: it is not used; docs/decisions/route-sources.md.) Sinks are told
/// apart by index, as the server does (see ``SoundServerModel``): the output in use is the sink our stream (the
/// sink input with our `application.process.id`) plays to, else the default sink, resolved by the server to a real
/// sink. The decisions are ``OutputPolicy``'s; this type only feeds it and applies them to the ``Player``.
///
/// ```swift
/// let watcher = OutputWatcher(player: player, mode: .pauseAndResume, resumeWindow: .seconds(1800), logger: logger)
/// let status = await watcher.observe { change in print(change) }
/// await watcher.run()          // until cancelled
/// ```
///
/// This file: the actor's state, its sources, and the policy's decisions applied to the player. The sound server as
/// last seen is a ``SoundServerModel``; what it publishes, and the setters, are in OutputWatcher+Changes.swift.
///
/// Everything mutable is isolated to the actor. The libpulse events are handled one at a time, in the server's
/// order (the next one waits for the queries the previous one needed).
public actor OutputWatcher {
    let player: Player  // internal: OutputWatcher+Changes.swift gives it its interruption mode
    private let logger: Logger
    /// Called after a lost output paused playback (not the sound server's death): e.g. an automatic bookmark.
    private let pausedForLoss: @Sendable () async -> Void
    private let client: PulseClient
    private let processID = getpid()
    /// What the player did about another sound asking for the output, in order (an ``InterruptionRelay``'s).
    private let interruptionNews: AsyncStream<InterruptionNews>
    /// What the player does when another sound asks for the output; Interruptions sets it.
    var interruptions: InterruptionMode
    // Internal, not private: OutputWatcher+Changes.swift publishes them (still actor-isolated).
    /// What to do when the output in use goes and comes back; Policy and ResumeWindow set its mode and window.
    var policy: OutputPolicy<ContinuousClock.Instant>
    /// What is published, and to whom: set and read from the actor, and from the player's observer when it tells of
    /// an interruption (``recordInterruption(_:)``), which must be announced before what the player does about it.
    let published = Mutex(Published())
    /// The sound server as last seen (empty while disconnected).
    var soundServer = SoundServerModel()

    public init(player: Player, mode: OutputPolicyMode = .pauseAndResume, resumeWindow: Duration = .seconds(30 * 60),
                interruptions: InterruptionMode = .pause, interruptionNews: AsyncStream<InterruptionNews> = AsyncStream { $0.finish() },
                server: String? = nil, logger: Logger, pausedForLoss: @escaping @Sendable () async -> Void = {}) {
        self.player = player
        self.interruptions = interruptions
        self.interruptionNews = interruptionNews
        self.pausedForLoss = pausedForLoss
        self.logger = logger
        self.policy = OutputPolicy(mode: mode, resumeWindow: resumeWindow)
        self.client = PulseClient(server: server, applicationName: "lecternd output watcher")
    }

    // MARK: - Running

    /// Connects to the sound server (again and again, with backoff, if it isn't there or goes away) and handles
    /// route changes, and publishes the player's interruptions, until cancelled.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [weak self, interruptionNews] in
                for await news in interruptionNews { await self?.interrupted(news) }
            }
            await client.run { [weak self] event in await self?.handle(event) }
            group.cancelAll()
        }
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

    // MARK: - The sound server

    private func serverConnected(_ info: PulseServerInfo) async {
        guard let connection = client.connection else { return }
        soundServer.connect()
        do {
            soundServer.list(try await connection.sinks())
            soundServer.setDefaultSink(try await resolve(defaultSink: info.defaultSinkName, on: connection))
            soundServer.findStream(try await connection.sinkInputs(ofProcess: processID).last)
        } catch {
            logger.warning("cannot list PulseAudio sinks", metadata: ["error": "\(error)"])
        }
        publishServerConnected()
        updateCurrentOutput()
        logger.info("PulseAudio connected", metadata: ["server": "\(info.serverName) \(info.serverVersion)",
                                                       "output": "\(soundServer.currentOutput)"])
        if soundServer.takeReturn() {
            await serverReturned()
        }
    }

    private func serverLost(_ reason: String) async {
        let previous = soundServer.currentOutput
        soundServer.disconnect()
        updateCurrentOutput()
        publishServerConnected()

        // Our stream played to the dead server: the player lets it go and pauses as for a failed output, in one
        // turn of its actor, whether pulsesink's own error came before (it paused then, keeping its place), comes
        // later (it changes nothing more), or would only have come once playback resumed.
        let paused = await player.soundServerLost(reason)
        // The policy remembers that pause, to be undone when the server is back (in the modes that resume).
        _ = policy.handle(.lost(output: previous, reason: .serverLost, playing: paused), at: .now)
        let action: RouteEvent.Action = paused ? .paused : .none
        logger.warning("PulseAudio connection lost; reconnecting in the background",
                       metadata: ["error": "\(reason)", "action": "\(action.rawValue)"])
        record(.serverLost, output: previous, action: action)
    }

    /// The server is back: the player, paused by the loss and untouched since, resumes when the policy says so (it
    /// loads the file again: the pipeline failed with the server), on the output it played to, once that is there.
    /// A server that has just started may not have loaded that sink yet (its socket comes first): resuming then
    /// failed to open the output ("missing a plug-in" from playsink); its arrival resumes instead.
    private func serverReturned() async {
        let untouched = await player.isPausedForLostOutput
        let lost = policy.pending?.output ?? ""
        // Not knowing the sinks (listing them failed), resume as before that check: a missing output fails again.
        let present = lost.isEmpty || soundServer.mayHaveSink(named: lost)
        let decision = policy.handle(.serverReturned(outputPresent: present, untouched: untouched), at: .now)
        var action = RouteEvent.Action.none
        if decision == .resume, await player.resumeForReturnedOutput() {
            action = .resumed
        }
        record(.serverReturned, output: soundServer.currentOutput, action: action)
    }

    // MARK: - Sinks and streams

    private func objectChanged(_ change: PulseObjectEvent) async {
        guard let connection = client.connection else { return }
        do {
            switch (change.facility, change.change) {
            case (.sink, .remove):
                guard let gone = soundServer.removeSink(change.index) else { return }
                // By index: another sink may have the same name (PipeWire), and removing it loses nothing.
                if soundServer.isInUse(gone.index) {
                    await outputLost(gone.name, port: gone.activePort ?? "", reason: .removed, seenBy: "sink removed")
                }
                await refreshUnknownDefaultSink(on: connection)
                updateCurrentOutput()
            case (.sink, _):
                guard let sink = try await connection.sink(index: change.index) else { return }
                let old = soundServer.updateSink(sink)
                if let old {
                    await portsChanged(from: old, to: sink)
                } else {
                    await outputAppeared(sink.name, sink: sink)
                }
                await refreshUnknownDefaultSink(on: connection)
                updateCurrentOutput()
            case (.sinkInput, .remove):
                guard soundServer.removeStream(change.index) else { return }
                updateCurrentOutput()
            case (.sinkInput, _):
                // Asked before the query: paused for a call, the server had muted the stream before its cork request.
                let pausedForCall = await player.isPausedForInterruption
                let mine = try await connection.sinkInputs(ofProcess: processID)
                guard let new = mine.first(where: { $0.index == change.index }) ?? mine.last else { return }
                if pausedForCall, !new.muted {
                    // The server unmutes the stream when the call ends; its uncork request comes only if the stream
                    // was corked by then (none after a call shorter than the pause's way to the server).
                    await player.interruptionEnded()
                }
                let before = soundServer.updateStream(new)
                if let before, before.index != new.sinkIndex, try await connection.sink(index: before.index) == nil {
                    // The server moved our stream because its sink went away (the removal event may come later).
                    soundServer.removeSink(before.index)
                    if soundServer.isInUse(before.index) {
                        await outputLost(before.name, port: before.activePort ?? "", reason: .removed, seenBy: "stream moved")
                    }
                }
                updateCurrentOutput()
            case (.server, _):
                soundServer.setDefaultSink(try await resolve(defaultSink: connection.serverInfo().defaultSinkName,
                                                             on: connection))
                updateCurrentOutput()
            }
        } catch {
            logger.debug("PulseAudio query failed", metadata: ["error": "\(error)"])
        }
    }

    /// The sink the server means by its default sink's name (which may be a placeholder, `@DEFAULT_SINK@`, or a
    /// name two sinks have): its real index and name; nil when there is no default sink or no such sink now.
    private func resolve(defaultSink name: String?, on connection: PulseConnection) async throws(PulseError) -> PulseSink? {
        guard let name, !name.isEmpty else { return nil }
        return try await connection.sink(named: name)
    }

    /// Asks for the default sink again when it is not known: after a restart, pipewire-pulse may name none until
    /// its sinks are there, and a removed default sink is forgotten until the server names the next one. A query
    /// that fails leaves it unknown (the server going away is an event of its own).
    private func refreshUnknownDefaultSink(on connection: PulseConnection) async {
        guard soundServer.defaultSink == nil, let info = try? await connection.serverInfo() else { return }
        soundServer.setDefaultSink(try? await resolve(defaultSink: info.defaultSinkName, on: connection))
    }

    /// A jack: the active port of the output in use became unavailable, or a port we lost came back.
    private func portsChanged(from old: PulseSink, to new: PulseSink) async {
        let change = new.jackChanges(since: old)
        if soundServer.isInUse(new.index), let port = change.unplugged {
            await outputLost(new.name, port: port, reason: .portUnavailable, seenBy: "port unavailable")
            return
        }
        for port in change.pluggedIn {
            await outputAppeared(Self.outputID(sink: new.name, port: port), sink: new, port: port)
        }
    }

    /// Pauses for a lost output; whether the player is paused for it now: by this call, or by the engine's "output
    /// failed" handled since the player was last read playing (the policy's pause is then the one to undo).
    private func pauseForLoss() async -> Bool {
        if await player.pauseForLostOutput() { return true }
        return await player.isPausedForLostOutput
    }

    /// How the policy names an output: the sink, or the sink and port for a jack.
    static func outputID(sink: String, port: String) -> String { port.isEmpty ? sink : "\(sink)#\(port)" }

    private func outputLost(_ sink: String, port: String, reason: OutputPolicy<ContinuousClock.Instant>.LossReason,
                            seenBy source: String) async {
        let output = reason == .portUnavailable ? Self.outputID(sink: sink, port: port) : sink
        // After the events the player had queued; paused by a call counts as playing: the loss's pause replaces it.
        let playing = await player.isPlayingOrInterrupted
        let decision = policy.handle(.lost(output: output, reason: reason, playing: playing), at: .now)
        guard decision == .pause else { return }
        var action = RouteEvent.Action.none
        if await pauseForLoss() {
            action = .paused
        } else {
            policy.forget()
        }
        logger.info("output lost", metadata: ["sink": "\(sink)", "port": "\(port)", "action": "\(action.rawValue)",
                                              "seen-by": "\(source)"])
        record(.outputLost, output: sink, port: port, action: action)
        if action == .paused { await pausedForLoss() }
    }

    /// An output appeared (`sink`, or its port `port`): if it is the one whose loss paused us, maybe resume, on it.
    private func outputAppeared(_ output: String, sink: PulseSink, port: String = "") async {
        guard let pending = policy.pending, pending.output == output, pending.reason != .serverLost else { return }
        let decision = policy.handle(.returned(output: output, untouched: await player.isPausedForLostOutput), at: .now)
        var action = RouteEvent.Action.none
        if decision == .resume {
            // The server moved our stream elsewhere when the sink went: send it back before playing, to this sink
            // (by index: another may have its name).
            if let stream = soundServer.stream, stream.sinkIndex != sink.index, let connection = client.connection {
                do {
                    try await connection.moveSinkInput(stream.index, toSinkIndex: sink.index)
                } catch {
                    logger.warning("cannot move the stream back", metadata: ["sink": "\(sink.name)", "error": "\(error)"])
                }
            }
            if await player.resumeForReturnedOutput() { action = .resumed }
        }
        logger.info("output returned", metadata: ["sink": "\(sink.name)", "port": "\(port)", "action": "\(action.rawValue)"])
        record(.outputReturned, output: sink.name, port: port, action: action)
    }

    // MARK: - Another sound asking for the output

    /// What the player does about a cork or uncork request, as a route event, recorded and announced at once, on the
    /// player's own thread, before the player acts on it (it tells first): a client that sees PlaybackStatus change
    /// has seen the event that explains it.
    nonisolated func recordInterruption(_ news: InterruptionNews) {
        switch news {
        case .began(let paused): record(.interrupted, output: nil, action: paused ? .paused : .none)
        case .ended(let resumed): record(.interruptionEnded, output: nil, action: resumed ? .resumed : .none)
        case .playingThrough: break
        }
    }

    /// When the player plays through a cork request, the stream is unmuted: PulseAudio's module-role-cork muted it with
    /// the request (and unmutes it only when the call ends).
    private func interrupted(_ news: InterruptionNews) async {
        if case .playingThrough = news { await unmuteOurStreams() }
    }

    private func unmuteOurStreams() async {
        guard let connection = client.connection else { return }
        do {
            for stream in try await connection.sinkInputs(ofProcess: processID) where stream.muted {
                try await connection.setSinkInputMute(stream.index, muted: false)
                logger.info("unmuted the stream the sound server muted for another sound", metadata: ["stream": "\(stream.index)"])
            }
        } catch {
            logger.warning("cannot unmute the stream", metadata: ["error": "\(error)"])
        }
    }
}

/// Hands the player's ``InterruptionNews`` to the output watcher, in order; a ``PlayerObserver`` that does not wait.
/// The route events (a call began, it ended) are recorded and announced at once (``OutputWatcher/recordInterruption(_:)``),
/// before the player pauses or resumes; what the watcher itself must do (unmute a stream played through a call) reaches
/// it through the stream.
public final class InterruptionRelay: PlayerObserver, Sendable {
    private let continuation: AsyncStream<InterruptionNews>.Continuation
    /// The watcher, once made (it is made after the player, which holds this relay).
    private let watcher = Mutex<OutputWatcher?>(nil)

    private init(continuation: AsyncStream<InterruptionNews>.Continuation) {
        self.continuation = continuation
    }

    /// The relay, for the player's observers, and the stream of news, for the ``OutputWatcher``.
    public static func make() -> (InterruptionRelay, AsyncStream<InterruptionNews>) {
        let (stream, continuation) = AsyncStream.makeStream(of: InterruptionNews.self)
        return (InterruptionRelay(continuation: continuation), stream)
    }

    /// The watcher the news are for.
    public func deliver(to watcher: OutputWatcher) { self.watcher.withLock { $0 = watcher } }

    public func handle(_ event: PlayerEvent) {
        guard case .interruption(let news) = event else { return }
        watcher.withLock { $0 }?.recordInterruption(news)
        continuation.yield(news)
    }
}
