import Dispatch
import Foundation
import GStreamer
import LecternCore
import Logging
import Synchronization

/// The real ``AudioEngine``: one GStreamer playbin, audio only, gapless, pitch-preserving rate changes.
///
/// ```swift
/// let engine = try GStreamerEngine()                      // autoaudiosink
/// let player = Player(engine: engine)                      // passed with `sending`; the actor is the only caller
///
/// let background = GStreamerEngine.building(audioSink: nil)  // returns at once; GStreamer starts on another thread
/// let readiness = background.readiness
/// try await readiness.wait()                                // before the first command reaches the engine
/// ```
///
/// No method waits for GStreamer. Each one updates the ``PlaybinStateMachine`` and queues the pipeline calls it
/// decided for the ``PipelineWorker``, the one thread that makes calls on the playbin; the playbin's bus thread
/// does the same with its events. The state machine and the queue are behind one lock, held only for that, so
/// the calls are made in the order the decisions were taken, and the events reach ``events`` in that order too.
///
/// A pipeline that hangs (docs/decisions/gstreamer-hangs.md): every state change and seek the worker makes is
/// watched; one still running after ``hangLimit`` gives that playbin up (kept, never released: releasing it would
/// hang too) with its worker, and a new worker builds a playbin like it (volume, gain and next file carried over; the
/// old one's events are ignored). A load in progress goes on in the new playbin; a stream that was ready is
/// reported as ``EngineEvent/outputFailed(_:)`` (the place is kept; Play loads the file again).
public final class GStreamerEngine: AudioEngine {
    public let events: AsyncStream<EngineEvent>
    /// Whether the first playbin is built; see ``building(audioSink:)``.
    public let readiness: EngineReadiness
    /// How long a state change or a seek may take before the pipeline is given up as hung.
    public var hangLimit: Duration { core.hangLimit }
    /// How many playbins were given up as hung (and replaced) so far.
    public var abandonedPipelines: Int { core.abandonedCount }

    private let core: EngineCore

    /// What the sound server is told of the stream, so that its volume controls show Lectern by name and icon (the
    /// desktop entry's) and its policies treat it as a media player. `media.role` "music": PulseAudio and PipeWire
    /// have no role for speech one listens to at length; "music" is the role of media playback, the one that role
    /// policies cork or duck for a phone call and that per-role volumes group with other players. ("a11y" is a
    /// screen reader's, which ducks the others; "video", "game", "event", "phone", "production" are not what this is.)
    public static let streamProperties = [
        "application.name": "Lectern",
        "application.icon_name": "org.lectern.Lectern",
        "media.role": "music",
    ]

    /// An engine whose playbin is built before this returns.
    /// - Parameter audioSink: a GStreamer pipeline description for the output (see ``Playbin/init(audioSink:onEvent:)``),
    ///   e.g. `"fakesink sync=true"` in tests; nil for the system's default output (autoaudiosink).
    /// - Parameter hangLimit: how long a state change or a seek may take before the pipeline is given up as hung.
    public convenience init(audioSink: String? = nil, hangLimit: Duration = .seconds(2)) throws(PipelineError) {
        self.init(building: audioSink, hangLimit: hangLimit)
        if case .failure(let error) = readiness.result() { throw error }
    }

    /// An engine whose playbin is being built on its worker thread (gst_init, the registry and plugin loading
    /// take tens of milliseconds at start-up). Await ``readiness`` before the first call: calls made earlier
    /// wait in the worker's queue, and a failed build (an invalid sink description) leaves them unanswered.
    public static func building(audioSink: String?) -> GStreamerEngine {
        GStreamerEngine(building: audioSink, hangLimit: .seconds(2))
    }

    private init(building audioSink: String?, hangLimit: Duration) {
        let (stream, continuation) = AsyncStream.makeStream(of: EngineEvent.self)
        let readiness = EngineReadiness()
        events = stream
        self.readiness = readiness
        core = EngineCore(audioSink: audioSink, hangLimit: hangLimit, continuation: continuation, readiness: readiness)
    }

    deinit {
        core.shutDown()
    }

    public func load(_ url: URL, at position: Duration) { core.apply { machine, _ in machine.load(url, at: position) } }
    public func play() { core.apply { machine, _ in machine.play() } }
    public func pause() { core.apply { machine, _ in machine.pause() } }
    public func stop() { core.apply { machine, _ in machine.stop() } }
    public func seek(to position: Duration) { core.apply { machine, _ in machine.seek(to: position) } }
    public func setVolume(_ volume: Double) { core.apply { machine, _ in machine.setVolume(volume) } }
    public func setGain(_ gain: Double) { core.apply { machine, _ in machine.setGain(gain) } }
    public func setCompressor(_ level: Double?) { core.apply { machine, _ in machine.setCompressor(level) } }
    public func setSkipSilence(_ skipping: SkipSilence?) { core.apply { machine, _ in machine.setSkipSilence(skipping) } }
    public func setNext(_ url: URL?) { core.apply { machine, _ in machine.setNext(url) } }
    public func setRate(_ rate: Double) { core.apply { machine, pipeline in machine.setRate(rate, pipeline: pipeline) } }
    public var position: Duration? { core.position }
    public var silenceRemoved: Duration { core.silenceRemoved }
}

/// The engine's shared part: the state machine, the current worker and the watchdog, behind one lock. The player
/// (through ``GStreamerEngine``), the worker thread, the bus thread and the watchdog's timers all come here.
private final class EngineCore: PipelineHost {
    private struct Shared {
        var machine = PlaybinStateMachine()
        /// The worker of the current playbin, and that playbin's query handle once built.
        var worker: PipelineWorker?
        var control: PlaybinControl?
        /// Workers whose playbin hung, kept for good (see PipelineWorker.abandon()).
        var abandoned: [PipelineWorker] = []
        /// The current worker's generation: the number of its playbin's bus events and call reports.
        var generation = 0
        /// The call the current worker is in: what the watchdog looks at.
        var inFlight: (ticket: Int, what: String)?
        var tickets = 0
        var shutDown = false
        /// Whether a check of what is heard is planned (``watchHeard(generation:)``).
        var watchingHeard = false
    }

    let hangLimit: Duration
    private let audioSink: String?
    private let continuation: AsyncStream<EngineEvent>.Continuation
    private let readiness: EngineReadiness
    private let shared = Mutex(Shared())
    private let logger = Logger(label: "lecternd.engine")

    init(audioSink: String?, hangLimit: Duration, continuation: AsyncStream<EngineEvent>.Continuation,
         readiness: EngineReadiness) {
        self.audioSink = audioSink
        self.hangLimit = hangLimit
        self.continuation = continuation
        self.readiness = readiness
        // Made under the lock: its thread's first report (`built`) waits until the worker is current.
        shared.withLock { shared in
            shared.worker = PipelineWorker(generation: 0, audioSink: audioSink, sound: .init(), next: nil, host: self)
        }
    }

    deinit {
        // A playbin given up as hung is never released, not even now: its deinit sets NULL, which would hang.
        for worker in shared.withLock({ $0.abandoned }) { _ = Unmanaged.passRetained(worker) }
    }

    var abandonedCount: Int { shared.withLock { $0.abandoned.count } }

    /// The position; the player told first (`.advanced`) when what is heard is the next file, and then nil for this
    /// once: the player hears of the new file before it reads a position in it.
    var position: Duration? {
        shared.withLock { shared in
            let queries = Queries(control: shared.control, heard: shared.control?.heard)
            guard shared.machine.awaitsNextStream else { return shared.machine.position(pipeline: queries) }
            let effects = shared.machine.heard(queries.heard, pipeline: queries)
            carryOut(effects, in: &shared)
            return effects.events.isEmpty ? shared.machine.position(pipeline: queries) : nil
        }
    }

    /// The current playbin's removed silence, read like the position: through its query handle, from any thread
    /// (zero while a playbin is being built, and again from zero in one that replaced a hung one).
    var silenceRemoved: Duration {
        shared.withLock { $0.control }?.silenceRemoved ?? .zero
    }

    /// One step of the state machine: its calls are queued for the current worker, its events reported, in the
    /// order taken (all under the lock).
    func apply(_ step: (inout PlaybinStateMachine, Queries) -> PlaybinStateMachine.Effects) {
        shared.withLock { shared in
            guard !shared.shutDown else { return }
            let effects = step(&shared.machine, Queries(control: shared.control))
            carryOut(effects, in: &shared)
        }
    }

    private func carryOut(_ effects: PlaybinStateMachine.Effects, in shared: inout Shared) {
        shared.worker?.enqueue(effects.calls)
        for event in effects.events { continuation.yield(event) }
        if shared.machine.awaitsNextStream, !shared.watchingHeard, let control = shared.control {
            shared.watchingHeard = true
            watchHeard(after: Self.heardCheckDelay(control.heard, playing: control.state == .playing),
                       generation: shared.generation)
        }
    }

    /// The longest wait between two checks of what is heard while the next stream is due: a pause, or a pulsesink's
    /// clock that stood, moves the time it is due.
    private static let heardCheckLimit = Duration.milliseconds(250)

    /// When to look again at what is heard: as the next stream is due (its start's running time, a millisecond after),
    /// at most ``heardCheckLimit`` from now; paused, in a second.
    private static func heardCheckDelay(_ heard: PlaybinControl.Heard, playing: Bool) -> Duration {
        guard playing else { return .seconds(1) }
        guard let due = heard.nextStreamIn else { return .milliseconds(40) }
        return min(max(due + .milliseconds(1), .milliseconds(1)), heardCheckLimit)
    }

    /// While the next stream's start waits to be heard: looks at what is heard after `delay`, and tells the player of
    /// the next file once it is (the player's own reads of the position may come later: its tick is half a second).
    private func watchHeard(after delay: Duration, generation: Int) {
        let (seconds, attoseconds) = delay.components
        let deadline = DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        DispatchQueue.global().asyncAfter(deadline: deadline) { [weak self] in
            guard let self else { return }
            shared.withLock { shared in
                shared.watchingHeard = false
                guard generation == shared.generation, !shared.shutDown, shared.machine.awaitsNextStream,
                      let control = shared.control else { return }
                let heard = control.heard
                carryOut(shared.machine.heard(heard, pipeline: Queries(control: control, heard: heard)), in: &shared)
            }
        }
    }

    func shutDown() {
        // The worker goes (it and this core hold each other); the playbin's late events then find no worker.
        let worker = shared.withLock { shared in
            shared.shutDown = true
            defer { shared.worker = nil }
            return shared.worker
        }
        continuation.finish()
        worker?.quit()
    }

    // MARK: PipelineHost

    func built(_ result: Result<PlaybinControl, PipelineError>, generation: Int) {
        shared.withLock { shared in
            guard generation == shared.generation else { return }
            switch result {
            case .success(let control):
                shared.control = control
            case .failure(let error) where generation > 0:
                // The same description built the first one: not expected. (The first one's failure goes to
                // `readiness`, whose owner reports it.)
                logger.error("a GStreamer pipeline to replace a hung one could not be built", metadata: ["error": "\(error)"])
            case .failure:
                break
            }
        }
        if generation == 0 { readiness.finish(result.map { _ in () }) }
    }

    func handle(_ event: PlaybinEvent, control: PlaybinControl, generation: Int) {
        shared.withLock { shared in
            guard generation == shared.generation, !shared.shutDown else { return }  // a playbin given up
            carryOut(shared.machine.handle(event, pipeline: Queries(control: control)), in: &shared)
        }
    }

    func loadStarted(_ number: Int, generation: Int) -> Bool {
        shared.withLock { shared in
            generation == shared.generation && !shared.shutDown && shared.machine.loadStarted(number)
        }
    }

    func seekDone(_ purpose: PlaybinStateMachine.SeekPurpose, accepted: Bool, control: PlaybinControl, generation: Int) {
        shared.withLock { shared in
            guard generation == shared.generation, !shared.shutDown else { return }
            carryOut(shared.machine.seekDone(purpose, accepted: accepted, pipeline: Queries(control: control)), in: &shared)
        }
    }

    func callStarted(_ what: String, generation: Int) -> Int {
        let ticket = shared.withLock { shared in
            shared.tickets += 1
            shared.inFlight = (shared.tickets, what)
            return shared.tickets
        }
        // One timer per call that may block (a few per file or user action); it finds the call long done.
        let (seconds, attoseconds) = hangLimit.components
        let deadline = DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        DispatchQueue.global().asyncAfter(deadline: deadline) { [weak self] in
            self?.checkHung(ticket, generation: generation)
        }
        return ticket
    }

    func callEnded(_ ticket: Int, generation: Int) -> Bool {
        shared.withLock { shared in
            guard generation == shared.generation else { return false }
            if shared.inFlight?.ticket == ticket { shared.inFlight = nil }
            return true
        }
    }

    /// The watchdog: the call with `ticket` has run for ``hangLimit``. Still running, its playbin is given up and
    /// a new worker builds another.
    private func checkHung(_ ticket: Int, generation: Int) {
        shared.withLock { shared in
            guard !shared.shutDown, generation == shared.generation, let old = shared.worker,
                  let inFlight = shared.inFlight, inFlight.ticket == ticket else { return }
            old.abandon()
            shared.abandoned.append(old)
            shared.inFlight = nil
            shared.control = nil
            shared.generation += 1
            shared.worker = PipelineWorker(generation: shared.generation, audioSink: audioSink,
                                           sound: shared.machine.sound,
                                           next: shared.machine.nextURL, host: self)
            logger.error("GStreamer stopped responding; its pipeline is given up and replaced",
                         metadata: ["reason": "\(inFlight.what) hung", "given up": "\(shared.abandoned.count)"])
            carryOut(shared.machine.pipelineReplaced(because: "\(inFlight.what) hung"), in: &shared)
        }
    }
}

/// The current playbin's queries, or none while it is being built; what is heard as read once (`heard`), or read at
/// each use.
private struct Queries: PipelineQueries {
    let control: PlaybinControl?
    private let read: PlaybinControl.Heard?

    init(control: PlaybinControl?, heard: PlaybinControl.Heard? = nil) {
        self.control = control
        self.read = heard
    }

    var position: Duration? { heard.position }
    var duration: Duration? { control?.duration }
    var heard: PlaybinControl.Heard { read ?? control?.heard ?? PlaybinControl.Heard(position: nil) }
    var seekable: Bool { control?.seekable ?? false }
}

/// Whether the engine's first playbin is built: awaited by the daemon before the first command, waited for by
/// the engine's throwing initializer.
public final class EngineReadiness: Sendable {
    private struct State {
        var result: Result<Void, PipelineError>?
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)

    fileprivate func finish(_ result: Result<Void, PipelineError>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        finished.signal()
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when the playbin is built; throws why it could not be (e.g. an invalid sink description).
    public func wait() async throws(PipelineError) {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if state.result == nil { state.waiters.append(waiter) }
                return state.result != nil
            }
            if done { waiter.resume() }
        }
        try result().get()
    }

    /// The outcome, waiting for the build if it is still running.
    public func result() -> Result<Void, PipelineError> {
        finished.wait()
        finished.signal()  // for whoever waits next
        guard let result = state.withLock({ $0.result }) else { preconditionFailure("readiness signalled without a result") }
        return result
    }
}
