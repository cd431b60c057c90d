import Foundation
import LecternCore
import Synchronization
import Testing

// Undo points and listening sessions as the player's moves and ticks make them. Fake engine, manual clock; the
// sessions' wall-clock time is the manual clock's.

/// Feeds the player's events to a ``SessionTracker`` as the book session does, and keeps what it would store: each
/// session's latest version by id (ids given in order, as the database would).
final class SessionRecorder: PlayerObserver {
    struct State {
        var tracker = SessionTracker()
        var stored: [Int64: ListeningSession] = [:]
        var writes = 0
        var view: PlayerView?
        /// Where the skipped silence's total comes from: the player's view (as the daemon takes it), or the engine's
        /// own count, which a rebuilt pipeline starts again from zero.
        var engine: FakeEngine?
    }
    let state = Mutex(State())
    let clock: ManualClock
    static let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    init(clock: ManualClock) { self.clock = clock }

    func handle(_ event: PlayerEvent) {
        state.withLock { state in
            let position = state.view?.position() ?? .zero
            let silence = state.engine?.silenceRemoved ?? state.view?.silenceSkipped ?? .zero
            let now = Self.epoch.addingTimeInterval(Double(clock.now.offset.microseconds) / 1e6)
            for var session in state.tracker.handle(event, filePosition: position, silence: silence, now: now) {
                state.writes += 1
                if session.id == nil {
                    let id = Int64(state.stored.count + 1)
                    state.tracker.assign(id: id, to: session)
                    session.id = id
                }
                state.stored[session.id!] = session
            }
        }
    }

    var sessions: [ListeningSession] { state.withLock { $0.stored.values.sorted { $0.id! < $1.id! } } }
    var open: ListeningSession? { state.withLock { $0.tracker.open } }
}

/// Where the player told its observers a move left from.
extension EventLog {
    var undoPoints: [UndoPoint] { all.compactMap { if case .moving(let point) = $0 { point } else { nil } } }
    /// The events but those (tested in HistoryTests).
    var withoutUndoPoints: [PlayerEvent] { all.filter { if case .moving = $0 { false } else { true } } }
}

func withRecorder(_ body: (Harness, SessionRecorder) async throws -> Void) async rethrows {
    let engine = FakeEngine()
    let log = EventLog()
    let tickClock = ManualClock()
    let recorder = SessionRecorder(clock: tickClock)
    let player = Player(engine: engine, tickClock: tickClock, options: ListeningOptions(smartRewind: .off),
                        observers: [log, recorder])
    recorder.state.withLock { $0.view = player.view }
    let run = Task { await player.run() }
    defer { run.cancel() }
    try await body(Harness(engine: engine, player: player, log: log, tickClock: tickClock), recorder)
    run.cancel()
    await run.value
}

/// Pauses, and expects one session stored: its book time heard and time spent (``near``), and what skip silence saved.
@discardableResult
func pauseExpectingOneSession(_ h: Harness, _ r: SessionRecorder, content: Duration, listened: Duration, silence: Duration,
                              sourceLocation: SourceLocation = #_sourceLocation) async throws -> ListeningSession {
    await h.player.pause()
    #expect(r.sessions.count == 1, "\(r.sessions)", sourceLocation: sourceLocation)
    let session = try #require(r.sessions.last, sourceLocation: sourceLocation)
    #expect(near(session.content, content) && near(session.listened, listened), "\(session)", sourceLocation: sourceLocation)
    #expect(session.silence == silence, "\(session)", sourceLocation: sourceLocation)
    return session
}

/// Within 1 s: the player's view moves on the real clock while it plays, between the manual clock's steps, and a busy
/// machine may hold the test's thread for long. The figures compared are tens of seconds apart.
func near(_ a: Duration, _ b: Duration) -> Bool { a - b <= .seconds(1) && b - a <= .seconds(1) }

extension Harness {
    /// Three files of book `id`, each `length` long, playing from `position` of file `startAt`.
    func openBook(_ id: Int64 = 7, length: Duration = .seconds(100), startAt: Int = 0, position: Duration = .zero) async {
        await player.open(makeItems(3, duration: length), startAt: startAt, position: position, name: .book(id))
        await ready(length)
    }

    /// Lets `duration` of manual time pass without playing (a paused listener).
    func wait(_ duration: Duration) async {
        tickClock.advance(by: duration)
        await settle()
    }
}

@Suite struct UndoPointTests {
    @Test func skipsInQuickSuccessionAreOneUndoPoint() async {
        await withRecorder { h, _ in
            await h.openBook(position: .seconds(80))
            await h.play(for: .seconds(2))
            for _ in 0..<3 {
                await h.player.skip(by: .seconds(-30))
                await h.wait(.seconds(3))
            }
            #expect(h.log.undoPoints.count == 1)
            let point = h.log.undoPoints.first
            #expect(point?.kind == .seek)
            #expect(point?.queueID == .book(7))
            #expect(point?.item.url == fileURL(0))
            #expect(point.map { near($0.position, .seconds(82)) } == true, "\(String(describing: point))")
        }
    }

    @Test func skipsFurtherApartThanTheWindowAreEachAnUndoPoint() async {
        await withRecorder { h, _ in
            await h.openBook(position: .seconds(10))
            await h.player.skip(by: .seconds(15))
            await h.play(for: UndoRuns.window + .seconds(1))
            await h.player.skip(by: .seconds(15))
            #expect(h.log.undoPoints.map(\.kind) == [.seek, .seek])
            #expect(h.log.undoPoints.map { near($0.position, .seconds(10)) } == [true, false])
            #expect(h.log.undoPoints.last.map { near($0.position, .seconds(36)) } == true, "\(h.log.undoPoints)")
        }
    }

    @Test func chapterStepsRunTogetherButJumpsAreEachTheirOwn() async {
        await withRecorder { h, _ in
            await h.player.open(chapteredItems(), startAt: 1, position: .seconds(10), name: .book(7))
            await h.ready(.seconds(100))
            await h.player.next()
            await h.wait(.seconds(1))
            await h.player.next()
            #expect(h.log.undoPoints.map(\.kind) == [.chapter])
            #expect(h.log.undoPoints.first.map { near($0.position, .seconds(10)) } == true)
            // A skip after chapter steps is another kind of move: its own point.
            await h.player.skip(by: .seconds(5))
            try? await h.player.jump(toFile: 0, at: .seconds(20))
            try? await h.player.jump(toFile: 2, at: .seconds(40))
            #expect(h.log.undoPoints.map(\.kind) == [.chapter, .seek, .jump, .jump])
            #expect(h.log.undoPoints.last?.item.url == fileURL(0))
            #expect(h.log.undoPoints.last.map { near($0.position, .seconds(20)) } == true)
        }
    }

    @Test func anUndoIsNoUndoPointAndEndsTheRun() async {
        await withRecorder { h, _ in
            await h.openBook(position: .seconds(50))
            await h.player.skip(by: .seconds(-10))
            try? await h.player.jump(toFile: 0, at: .seconds(50), as: nil)
            #expect(h.log.undoPoints.count == 1)
            // A skip right after the undo is a new move, not the run before it.
            await h.player.skip(by: .seconds(-10))
            #expect(h.log.undoPoints.count == 2)
        }
    }

    /// Stop returns to the start of the chapter: the place it leaves is an undo point, told before the stop; a second
    /// Stop, already stopped, leaves none.
    @Test func aStopLeavesItsPlaceAsAnUndoPoint() async {
        await withRecorder { h, _ in
            await h.openBook(startAt: 1, position: .seconds(30))
            await h.play(for: .seconds(2))
            await h.player.stop()
            await h.player.stop()
            #expect(h.log.undoPoints.map(\.kind) == [.stop])
            #expect(h.log.undoPoints.first?.item.url == fileURL(1))
            #expect(h.log.undoPoints.first.map { near($0.position, .seconds(32)) } == true, "\(h.log.undoPoints)")
            #expect(h.player.view.state.status == .stopped)
        }
    }

    @Test func aRefusedMoveLeavesNoUndoPoint() async {
        await withRecorder { h, _ in
            await h.openBook(position: .seconds(50))
            await #expect(throws: PlayerError.self) { try await h.player.jump(toFile: 9, at: .zero) }
            await #expect(throws: PlayerError.self) { try await h.player.goTo(chapter: 40) }
            #expect(h.log.undoPoints.isEmpty)
        }
    }
}

@Suite struct ListeningSessionTests {
    @Test func playingMakesOneSessionThatGrowsAtEachTickAndEndsAtThePause() async {
        await withRecorder { h, r in
            await h.openBook(startAt: 1, position: .seconds(10))
            await h.play(for: .seconds(30))
            let open = r.open
            #expect(open?.bookID == 7)
            // Book position: file 1 starts 100 s into the book.
            #expect(open.map { near($0.from, .seconds(110)) } == true, "\(String(describing: open))")
            #expect(open.map { near($0.to, .seconds(140)) } == true, "\(String(describing: open))")
            let writes = r.state.withLock { $0.writes }
            #expect(writes >= 50, "one write per tick (twice a second): \(writes)")
            await h.player.pause()
            #expect(r.open == nil)
            let sessions = r.sessions
            #expect(sessions.count == 1)
            #expect(sessions.first.map { near($0.listened, .seconds(30)) && near($0.content, .seconds(30)) } == true, "\(sessions)")
            #expect(sessions.first.map { $0.ended.timeIntervalSince($0.started) } == 30)
            #expect(sessions.first?.rate == 1)
        }
    }

    @Test func atASpeedTheBookTimeHeardIsMoreThanTheTimeSpent() async {
        await withRecorder { h, r in
            await h.openBook()
            try? await h.player.setRate(2)
            await h.play(for: .seconds(20))
            await h.player.pause()
            let session = r.sessions.last
            #expect(r.sessions.count == 1, "\(r.sessions)")
            #expect(session.map { near($0.listened, .seconds(20)) } == true, "\(String(describing: session))")
            #expect(session.map { near($0.content, .seconds(40)) } == true, "\(String(describing: session))")
            #expect(session?.rate == 2)
        }
    }

    @Test func aShortPauseNearThePlaceContinuesTheSessionALongOneStartsAnother() async {
        await withRecorder { h, r in
            await h.openBook()
            await h.play(for: .seconds(10))
            await h.player.pause()
            await h.wait(.seconds(60))
            await h.player.play()
            await h.play(for: .seconds(10))
            await h.player.pause()
            #expect(r.sessions.count == 1, "\(r.sessions)")
            #expect(r.sessions.first.map { near($0.listened, .seconds(20)) && near($0.to, .seconds(20)) } == true, "\(r.sessions)")
            #expect(r.sessions.first.map { $0.ended.timeIntervalSince($0.started) } == 80, "the pause is within the session, not counted")

            await h.wait(.seconds(SessionTracker.mergeWithin + 1))
            await h.player.play()
            await h.play(for: .seconds(5))
            await h.player.pause()
            #expect(r.sessions.count == 2, "\(r.sessions)")
            #expect(r.sessions.last.map { near($0.from, .seconds(20)) && near($0.listened, .seconds(5)) } == true, "\(r.sessions)")
        }
    }

    @Test func aSeekFarAwayStartsAnotherSessionANearOneDoesNot() async {
        await withRecorder { h, r in
            await h.openBook(length: .seconds(1000))
            await h.play(for: .seconds(40))
            await h.player.skip(by: .seconds(-15))
            await h.play(for: .seconds(10))
            #expect(r.sessions.count == 1, "\(r.sessions)")
            #expect(r.open.map { near($0.to, .seconds(40)) && near($0.listened, .seconds(50)) } == true, "\(String(describing: r.open))")
            // 35 s into the book to 1035 s: far.
            try? await h.player.jump(toFile: 1, at: .seconds(35))
            await h.ready(.seconds(1000))
            await h.play(for: .seconds(5))
            await h.player.pause()
            #expect(r.sessions.count == 2, "\(r.sessions)")
            #expect(r.sessions.first.map { near($0.from, .zero) && near($0.to, .seconds(40)) } == true, "\(r.sessions)")
            #expect(r.sessions.last.map { near($0.from, .seconds(1035)) && near($0.to, .seconds(1040)) } == true, "\(r.sessions)")
        }
    }

    @Test func silenceSkippedIsSavedTimeNotListeningTime() async throws {
        try await withRecorder { h, r in
            await h.openBook()
            await h.play(for: .seconds(10))
            h.engine.skipSilence(removing: .seconds(3))
            await h.play(for: .seconds(10))
            // 23 s of the book heard in 20 s: the 3 s skip silence removed are saved, not listened.
            let session = try await pauseExpectingOneSession(h, r, content: .seconds(23), listened: .seconds(20), silence: .seconds(3))
            #expect(near(session.to, .seconds(23)), "\(session)")
        }
    }

    @Test func aLongPauseSkippedInOneTickIsCountedNotDropped() async throws {
        try await withRecorder { h, r in
            await h.openBook(length: .seconds(1000))
            try await h.player.setRate(2)
            await h.play(for: .seconds(5))
            // A minute-long pause shortened to its threshold within a tick: 60 s of the file in half a second, far
            // beyond what playing at 2x could move, but explained by the 30 s of listening removed.
            h.engine.skipSilence(removing: .seconds(30))
            await h.play(for: .seconds(5))
            try await pauseExpectingOneSession(h, r, content: .seconds(80), listened: .seconds(10), silence: .seconds(30))
        }
    }

    @Test func aTotalThatStartsAgainFromZeroCountsNothingNegative() async throws {
        try await withRecorder { h, r in
            // The engine's own count, as a daemon that passed it on would: a rebuilt pipeline counts from zero.
            r.state.withLock { $0.engine = h.engine }
            await h.openBook()
            await h.play(for: .seconds(5))
            h.engine.skipSilence(removing: .seconds(2))
            await h.play(for: .seconds(1))
            h.engine.silenceRemoved = .zero
            await h.play(for: .seconds(5))
            h.engine.skipSilence(removing: .seconds(1))
            await h.play(for: .seconds(1))
            try await pauseExpectingOneSession(h, r, content: .seconds(15), listened: .seconds(12), silence: .seconds(3))
        }
    }

    @Test func anotherBookOrASpeedChangeEndsTheSessionFilesOutsideTheLibraryHaveNone() async {
        await withRecorder { h, r in
            await h.openBook(7)
            await h.play(for: .seconds(5))
            try? await h.player.setRate(1.5)
            await h.play(for: .seconds(5))
            await h.openBook(8)
            await h.play(for: .seconds(5))
            await h.player.open(makeItems(1), play: true)
            await h.ready(.seconds(100))
            await h.play(for: .seconds(5))
            await h.player.pause()
            #expect(r.sessions.map(\.bookID) == [7, 7, 8], "\(r.sessions)")
            #expect(r.sessions.map(\.rate) == [1, 1.5, 1.5], "book 8 opened without settings: at the speed set")
        }
    }
}
