import Foundation
import LecternCore
import Synchronization
import Testing

/// Everything the player's observers were told, in order.
final class EventLog: PlayerObserver {
    private let events = Mutex<[PlayerEvent]>([])

    func handle(_ event: PlayerEvent) { events.withLock { $0.append(event) } }
    func clear() { events.withLock { $0.removeAll() } }

    var all: [PlayerEvent] { events.withLock { $0 } }
    var count: Int { events.withLock { $0.count } }
    var states: [PlayerState] {
        all.compactMap { if case .stateChanged(let state, _) = $0 { state } else { nil } }
    }
    var seeks: [Duration] {
        all.compactMap { if case .seeked(let position) = $0 { position } else { nil } }
    }
    var lastState: PlayerState? { states.last }
}

/// Polls `condition` until it holds; records an issue after `timeout`: a point to give up at, not a speed. With every
/// suite started at once on a busy 2-core machine, the player's tasks can wait tens of seconds for a thread of the
/// pool while other suites' synchronous tests hold both.
@discardableResult
func waitUntil(_ what: String, timeout: Duration = .seconds(120), sourceLocation: SourceLocation = #_sourceLocation,
               _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline {
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
            return false
        }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// A player wired to a fake engine, a manual tick clock and an event log, with its `run()` loop going.
struct Harness: Sendable {
    let engine: FakeEngine
    let player: Player
    let log: EventLog
    let tickClock: ManualClock

    /// Hands `event` to the player as if the engine had reported it, and returns once it is handled.
    func send(_ event: EngineEvent, sourceLocation: SourceLocation = #_sourceLocation) async {
        await player.handle(event)
    }

    /// Finishes the engine's current stream and waits for the player to handle the resulting event.
    @discardableResult
    func finish(sourceLocation: SourceLocation = #_sourceLocation) async -> EngineEvent {
        let event = engine.finishWithoutEmitting()
        await player.handle(event)
        return event
    }

    func ready(_ duration: Duration? = nil, sourceLocation: SourceLocation = #_sourceLocation) async {
        let url = engine.currentURL ?? URL(fileURLWithPath: "/nothing-loaded")
        await send(.ready(url, duration: duration), sourceLocation: sourceLocation)
    }

    /// Waits for the tasks the tick clock woke to run on (to the player), then for whatever the actor is doing.
    func settle() async {
        await waitUntil("the tasks the tick clock woke to run") { tickClock.wokenHaveRun }
        await Task.yield()
        _ = await player.snapshot
    }

    /// The output plays: `elapsed` of the engine's and the tick clock's time pass, and the wake-up that polls the
    /// engine while the position clock waits for it has run (the clock runs from the engine's position).
    func outputPlays(for elapsed: Duration = Player.clockPollInterval, sourceLocation: SourceLocation = #_sourceLocation) async {
        await waitUntil("the wake-up to sleep", sourceLocation: sourceLocation) { tickClock.hasSleeper(tolerance: Player.wakeTolerance) }
        engine.advance(by: elapsed)
        tickClock.advance(by: elapsed)
        await waitUntil("the position clock to run", sourceLocation: sourceLocation) { positionClock.speed > 0 }
    }

    /// The output plays, and the polls that follow its start are over: with one file (no wake-up planned for its end),
    /// only the tick loop sleeps on the tick clock.
    func outputPlaysAndPollsEnd(sourceLocation: SourceLocation = #_sourceLocation) async {
        await outputPlays(sourceLocation: sourceLocation)
        await waitUntil("the wake-up to sleep", sourceLocation: sourceLocation) { tickClock.hasSleeper(tolerance: Player.wakeTolerance) }
        engine.advance(by: Player.clockSettleTime)
        tickClock.advance(by: Player.clockSettleTime)
        await waitUntil("the tick loop alone to sleep", sourceLocation: sourceLocation) { tickClock.sleeperCount == 1 }
    }

    /// Forgets the calls and events so far.
    func reset() {
        engine.clearCalls()
        log.clear()
    }

    var positionClock: PositionClock { player.view.clock }
}

func withHarness(_ body: (Harness) async throws -> Void) async rethrows {
    let engine = FakeEngine()
    let log = EventLog()
    let tickClock = ManualClock()
    let player = Player(engine: engine, tickClock: tickClock, observers: [log])
    let run = Task { await player.run() }
    defer { run.cancel() }
    try await body(Harness(engine: engine, player: player, log: log, tickClock: tickClock))
    run.cancel()
    await run.value
}

func fileURL(_ index: Int) -> URL { URL(filePath: "/books/part\(index).mp3") }

/// `count` items (ids 100+i, which the player replaces), each `duration` long unless nil.
func makeItems(_ count: Int, duration: Duration? = .seconds(100)) -> [MediaItem] {
    (0..<count).map { MediaItem(id: 100 + $0, url: fileURL($0), title: "Part \($0)", duration: duration) }
}

extension PlayerError {
    var isInvalidValue: Bool { if case .invalidValue = self { true } else { false } }
}
