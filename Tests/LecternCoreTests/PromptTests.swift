import Foundation
import LecternCore
import Synchronization
import Testing

/// A ``SpeechEngine`` that records what it is asked to say; the test ends prompts with ``finish()`` or ``fail(_:)``.
/// Like the real one, a new prompt ends the one it cuts short (`.finished` first).
final class FakeSpeech: SpeechEngine {
    private struct State {
        var said: [String] = []
        var current: Int?
        var problem: String?
        var voices: [SpeechVoice] = []
    }
    private let state = Mutex(State())
    let events: AsyncStream<SpeechEvent>
    private let continuation: AsyncStream<SpeechEvent>.Continuation

    init(problem: String? = nil) {
        (events, continuation) = AsyncStream.makeStream(of: SpeechEvent.self)
        state.withLock { $0.problem = problem }
    }

    func speak(_ text: String, id: Int, voice: SpeechVoice) {
        let cut = state.withLock { state in
            defer { state.said.append(text); state.voices.append(voice); state.current = id }
            return state.current
        }
        if let cut { continuation.yield(.finished(id: cut)) }
        if problem() == nil { continuation.yield(.started(id: id)) }
    }

    func silence() { finish() }
    func problem() -> String? { state.withLock { $0.problem } }

    var said: [String] { state.withLock { $0.said } }
    var voices: [SpeechVoice] { state.withLock { $0.voices } }
    var isSpeaking: Bool { state.withLock { $0.current != nil } }

    /// The current prompt is heard to its end.
    func finish() {
        guard let id = state.withLock({ state in defer { state.current = nil }; return state.current }) else { return }
        continuation.yield(.finished(id: id))
    }

    /// The current prompt fails.
    func fail(_ message: String) {
        guard let id = state.withLock({ state in defer { state.current = nil }; return state.current }) else { return }
        continuation.yield(.failed(id: id, message))
    }
}

/// Records what the prompter reported of its engine.
final class ProblemLog: Sendable {
    private let reports = Mutex<[String?]>([])
    func append(_ problem: String?) { reports.withLock { $0.append(problem) } }
    var all: [String?] { reports.withLock { $0 } }
}

/// A player on the fake engine and a prompter on the fake speech engine, both running.
struct PromptHarness: Sendable {
    let engine: FakeEngine
    let player: Player
    let log: EventLog
    let clock: ManualClock
    let speech: FakeSpeech
    let feed: PromptFeed
    let prompter: Prompter
    let problems: ProblemLog

    /// Three files of 100 s (three chapters), in the book "The Book", opened paused at file 0, 10 s.
    func openBook(play: Bool = false) async {
        let items = (0..<3).map { MediaItem(id: $0, url: fileURL($0), title: "Part \($0)", album: "The Book", duration: .seconds(100)) }
        await player.open(items, position: .seconds(10), play: play, name: .book(7))
        await player.handle(.ready(fileURL(0), duration: .seconds(100)))
    }

    /// What was said once everything fed so far is handled.
    func said() async -> [String] {
        await feed.settled()
        return speech.said
    }

    /// The engine's volume as the player last set it.
    var engineVolume: Double? {
        engine.calls.last { if case .setVolume = $0 { true } else { false } }.flatMap { if case .setVolume(let v) = $0 { v } else { nil } }
    }
}

func withPrompts(enabled: Bool = true, speech: FakeSpeech = FakeSpeech(), _ body: (PromptHarness) async throws -> Void) async rethrows {
    let engine = FakeEngine()
    let log = EventLog()
    let clock = ManualClock()
    let (feed, inputs) = Prompter.makeFeed()
    let player = Player(engine: engine, tickClock: clock, observers: [log, feed])
    let problems = ProblemLog()
    let prompter = Prompter(speech: speech, view: player.view, player: player, inputs: inputs, enabled: enabled,
                            problemChanged: { problems.append($0) })
    let running = [Task { await player.run() }, Task { await prompter.run() }]
    defer { running.forEach { $0.cancel() } }
    try await body(PromptHarness(engine: engine, player: player, log: log, clock: clock, speech: speech, feed: feed,
                                 prompter: prompter, problems: problems))
}

@Suite struct PromptTests {
    @Test func aNewBookAndANewChapterAreSaid() async {
        await withPrompts { h in
            await h.openBook()
            #expect(await h.said() == ["The Book.\nChapter 1 of 3: Part 0."])
            await h.player.next()
            #expect(await h.said().last == "Chapter 2 of 3: Part 1.")
        }
    }

    @Test func promptsOffSaysNothingButARequestIsStillSpoken() async {
        await withPrompts(enabled: false) { h in
            await h.openBook()
            await h.player.next()
            h.feed.bookmarkAdded("Here")
            h.feed.keyPressed()
            await h.player.play()
            h.feed.keyHandled(h.player.view.state)
            #expect(await h.said() == [])
            #expect(h.engineVolume == nil, "ducked with prompts off")

            let text = await h.prompter.say(.chapter)
            #expect(text == "Chapter 2 of 3: Part 1.")
            #expect(h.speech.said == [text])
            await waitUntil("the book lowered") { h.engineVolume == Player.duckedVolume }
        }
    }

    @Test func theBookIsDuckedWhileAPromptSpeaksAndComesBackUnmoved() async {
        await withPrompts { h in
            await h.openBook(play: true)
            await waitUntil("the book's prompt") { h.speech.isSpeaking }
            await waitUntil("the book lowered") { h.engineVolume == Player.duckedVolume }
            #expect(await h.player.isDucked)
            // The listener's volume is untouched: clients see no change.
            #expect(await h.player.snapshot.volume == 1)
            h.speech.finish()
            await waitUntil("the book back") { h.engineVolume == 1 }
            #expect(!(await h.player.isDucked))
            // Nothing but the volume reached the engine: no seek, no pause; the position is the player's own.
            let moves = h.engine.calls.filter {
                switch $0 {
                case .seek, .pause, .stop, .load: true
                default: false
                }
            }
            #expect(moves == [.load(fileURL(0), at: .seconds(10))], "\(h.engine.calls)")
            #expect(h.log.seeks == [.seconds(10)])
            #expect(await h.player.snapshot.status == .playing)
        }
    }

    @Test func theListenersVolumeAndTheFadeAreDuckedTooAndRestored() async throws {
        await withPrompts { h in
            await h.openBook(play: true)
            await waitUntil("the book lowered") { h.engineVolume == Player.duckedVolume }
            try? await h.player.setVolume(0.8)
            #expect(h.engineVolume == 0.8 * Player.duckedVolume)
            h.speech.finish()
            await waitUntil("the book back") { h.engineVolume == 0.8 }
        }
    }

    @Test func aMediaKeySaysTheStateItLeftOnce() async {
        await withPrompts { h in
            await h.openBook()
            _ = await h.said()
            h.speech.finish()
            h.feed.keyPressed()
            await h.player.next()
            h.feed.keyHandled(h.player.view.state)
            #expect(await h.said().last == "paused, chapter 2 of 3")
            h.feed.keyPressed()
            await h.player.play()
            h.feed.keyHandled(h.player.view.state)
            h.feed.keyPressed()
            try? await h.player.playPause()
            h.feed.keyHandled(h.player.view.state)
            h.feed.keyPressed()
            try? await h.player.playPause()
            h.feed.keyHandled(h.player.view.state)
            #expect(await h.said() == ["The Book.\nChapter 1 of 3: Part 0.", "paused, chapter 2 of 3", "playing, chapter 2 of 3",
                                       "paused, chapter 2 of 3", "playing, chapter 2 of 3"])
        }
    }

    @Test func theNextPromptCutsTheCurrentOneAndTheBookComesBackAfterTheLast() async {
        await withPrompts { h in
            await h.openBook(play: true)
            await h.player.next()
            h.feed.bookmarkAdded("Storm")
            #expect(await h.said() == ["The Book.\nChapter 1 of 3: Part 0.", "Chapter 2 of 3: Part 1.", "Bookmark added: Storm."])
            // The cut prompts' ends did not bring the book back: the last one still speaks.
            await waitUntil("the book lowered") { h.engineVolume == Player.duckedVolume }
            #expect(await h.player.isDucked)
            h.speech.finish()
            await waitUntil("the book back") { h.engineVolume == 1 }
        }
    }

    @Test func theSleepTimersLastMinuteIsSaidOnce() async throws {
        await withPrompts { h in
            await h.openBook(play: true)
            h.speech.finish()
            try? await h.player.setSleepTimer(.after(.seconds(90)))
            await h.feed.settled()
            for _ in 0..<20 {  // 20 × 2 s of playing: through the 60 s mark, each tick heard in its turn
                h.clock.advance(by: .seconds(2))
                h.engine.advance(by: .seconds(2))
                await h.player.tick()
                await h.feed.settled()
            }
            let said = await h.said()
            #expect(said.filter { $0 == "Sleep timer: one minute left." }.count == 1, "\(said)")
            #expect(said.last == "Sleep timer: one minute left.")
        }
    }

    @Test func aFailedFileIsSaid() async {
        await withPrompts { h in
            await h.openBook(play: true)
            await h.player.handle(.failed("no decoder"))
            #expect(await h.said().contains("Cannot play Part 0."))
        }
    }

    @Test func theStatusTellsTheTimeLeftAtTheCurrentSpeed() async throws {
        await withPrompts(enabled: false) { h in
            await h.openBook()
            try? await h.player.setRate(2)
            // Chapter 1 at 10 s of 100 s: 90 s left, 45 s at speed 2; the book: 290 s, 145 s at speed 2.
            #expect(await h.prompter.say(.timeLeft) == "45 seconds left in the chapter, 2 minutes in the book.")
            #expect(await h.prompter.say(.status)
                    == "The Book.\nChapter 1 of 3: Part 0.\nPaused.\n45 seconds left in the chapter, 2 minutes in the book.")
            await h.player.stop()
            await h.player.open([], play: false)
        }
        await withPrompts(enabled: false) { h in
            #expect(await h.prompter.say(.status) == "Nothing is loaded.")
        }
    }

    @Test func aMissingEngineIsReportedOnceAndTheBookIsNotLeftDucked() async {
        await withPrompts(enabled: false, speech: FakeSpeech(problem: "espeak-ng is not installed")) { h in
            await h.prompter.setEnabled(true)
            #expect(h.problems.all == ["espeak-ng is not installed"])
            #expect(await h.prompter.problem == "espeak-ng is not installed")
            await h.openBook(play: true)
            _ = await h.said()
            h.speech.fail("espeak-ng is not installed")
            await waitUntil("the book back") { h.engineVolume == 1 }
            await h.player.next()
            _ = await h.said()
            h.speech.fail("espeak-ng is not installed")
            await waitUntil("the book back") { h.engineVolume == 1 }
            #expect(h.problems.all == ["espeak-ng is not installed"], "reported more than once")
            #expect(await h.player.snapshot.status == .playing)
        }
    }

    @Test func durationsAreSaidInWords() {
        #expect(Prompter.spoken(.seconds(1)) == "1 second")
        #expect(Prompter.spoken(.seconds(59)) == "59 seconds")
        #expect(Prompter.spoken(.seconds(89)) == "1 minute")
        #expect(Prompter.spoken(.seconds(3600)) == "1 hour")
        #expect(Prompter.spoken(.seconds(3 * 3600 + 5 * 60 + 10)) == "3 hours 5 minutes")
    }
}
