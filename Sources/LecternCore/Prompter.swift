import Foundation
import Logging

/// Spoken prompts, for listeners who cannot see a screen: decides what to say when, has a ``SpeechEngine`` say it,
/// and lowers the book (``PromptedPlayer``) while it speaks.
///
/// ```swift
/// let (feed, inputs) = Prompter.makeFeed()           // `feed` is one of the player's observers
/// let player = Player(engine: engine, observers: [feed, ...])
/// let prompter = Prompter(speech: EspeakSpeech(...), view: player.view, player: player, inputs: inputs)
/// async let _ = prompter.run()
/// await prompter.setEnabled(true)
/// _ = await prompter.say(.status)                      // "Book. Chapter 4 of 12: The Storm. Paused. ..."
/// ```
///
/// With prompts on it speaks, from the player's events and the feed, in the order they happened: a new book and a new
/// chapter, the new state after a media key (the feed's `keyPressed()` before the command, `keyHandled(_:)` after:
/// the state changes in between are said once, as the key's result), a bookmark added, the sleep timer's last minute,
/// a file that failed. ``say(_:)`` speaks on request, prompts on or off. One prompt at a time: the next cuts the
/// current one short, nothing piles up. The book is lowered from the moment a prompt is asked for until the last
/// one has finished; its position and the sleep timer are the player's and never touched (the book plays on
/// under the prompt; a prompt over a paused book is no playing time).
///
/// The engine's problem (not installed, failing) is logged and handed to `problemChanged` once, when it first
/// shows; prompts then go on being asked for, silently, and a prompt that works again clears it.
public actor Prompter {
    /// What the prompter hears besides its own engine, in the order it happened.
    public enum Input: Sendable {
        case player(PlayerEvent)
        /// A media key (MPRIS PlayPause, Next, Previous...) is about to reach the player.
        case keyPressed
        /// The player has handled it: say the state it left (as published then).
        case keyHandled(PlayerState)
        /// A bookmark was added (its title).
        case bookmarkAdded(String)
        /// Resumed once everything fed before it is handled.
        case barrier(CheckedContinuation<Void, Never>)
    }

    /// What ``say(_:)`` speaks.
    public enum Request: String, Sendable, CaseIterable {
        /// The book, the chapter, the state and the time left in both.
        case status
        /// The time left in the chapter and the book, at the current speed.
        case timeLeft = "time-left"
        /// The chapter: its number and title.
        case chapter
    }

    /// The sleep timer's warning comes when this much playing time is left.
    public static let sleepWarning: Duration = .seconds(60)

    private let speech: any SpeechEngine
    private let view: PlayerView
    private let player: any PromptedPlayer
    private let inputs: AsyncStream<Input>
    private let problemChanged: @Sendable (String?) -> Void
    private let logger: Logger

    public private(set) var enabled: Bool
    public private(set) var voice: SpeechVoice
    /// The engine's problem as last reported; nil while it works.
    public private(set) var problem: String?
    /// The prompt being spoken (its id), until the engine says it finished.
    private var speaking: Int?
    private var lastID = 0
    /// Media keys pressed and not yet handled: the state changes they make are said as theirs.
    private var keysPending = 0
    /// The sleep timer's time left when last looked at: the warning is said when it passes ``sleepWarning``.
    private var sleepLeft: Duration?
    /// Whether the book was last asked to be lowered, and that request on its way to the player: each waits for the
    /// one before, so they reach it in the order decided (the actor decides without awaiting in between).
    private var ducked = false
    private var ducking: Task<Void, Never>?

    /// The stream the prompter reads and its writer, which is also a ``PlayerObserver``: make the feed, give it to the
    /// player and the services, then the prompter.
    public static func makeFeed() -> (PromptFeed, AsyncStream<Input>) {
        let (stream, continuation) = AsyncStream.makeStream(of: Input.self)
        return (PromptFeed(continuation: continuation), stream)
    }

    public init(speech: any SpeechEngine, view: PlayerView, player: any PromptedPlayer, inputs: AsyncStream<Input>,
                enabled: Bool = false, voice: SpeechVoice = SpeechVoice(), logger: Logger = Logger(label: "lectern.prompts"),
                problemChanged: @escaping @Sendable (String?) -> Void = { _ in }) {
        self.speech = speech
        self.view = view
        self.player = player
        self.inputs = inputs
        self.enabled = enabled
        self.voice = voice
        self.logger = logger
        self.problemChanged = problemChanged
    }

    /// Reads the feed and the engine's events until cancelled.
    public func run() async {
        if enabled { checkEngine() }
        let inputs = inputs
        let events = speech.events
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [weak self] in
                for await input in inputs { await self?.take(input) }
            }
            group.addTask { [weak self] in
                for await event in events { await self?.heard(event) }
            }
            await group.next()
            group.cancelAll()
        }
    }

    // MARK: - Settings

    /// Prompts on or off; turned off, the prompt being spoken stops and the book comes back.
    public func setEnabled(_ enabled: Bool) async {
        guard enabled != self.enabled else { return }
        self.enabled = enabled
        if enabled {
            sleepLeft = await player.sleepTimeLeft
            checkEngine()
        } else if speaking != nil {
            speech.silence()
        }
    }

    public func setVoice(_ voice: SpeechVoice) { self.voice = voice }

    // MARK: - Speaking

    /// Speaks `request` now, prompts on or off (a listener asked); returns the text.
    @discardableResult
    public func say(_ request: Request) async -> String {
        let text = Self.text(for: request, view: view)
        speak(text)
        return text
    }

    /// Speaks `text`, cutting short what is spoken now; the book is lowered (before the prompt's first sound: the
    /// engine takes tens of milliseconds to start it).
    public func speak(_ text: String) {
        lastID += 1
        speaking = lastID
        logger.debug("prompt", metadata: ["id": "\(lastID)", "text": "\(text)"])
        duck(true)
        speech.speak(text, id: lastID, voice: voice)
    }

    private func heard(_ event: SpeechEvent) {
        logger.debug("prompt heard", metadata: ["event": "\(event)"])
        switch event {
        case .started(let id):
            if id == speaking, problem != nil { report(nil) }
        case .finished(let id):
            guard id == speaking else { return }
            speaking = nil
            duck(false)
        case .failed(let id, let message):
            report(message)
            guard id == speaking else { return }
            speaking = nil
            duck(false)
        }
    }

    private func duck(_ on: Bool) {
        guard on != ducked else { return }
        ducked = on
        ducking = Task { [previous = ducking, player] in
            await previous?.value
            await player.duck(on)
        }
    }

    private func checkEngine() {
        report(speech.problem())
    }

    /// Logs a problem when it first shows (not again while prompts still cannot be heard, whatever its words), and
    /// tells `problemChanged` of each change.
    private func report(_ problem: String?) {
        guard problem != self.problem else { return }
        let wasWorking = self.problem == nil
        self.problem = problem
        if let problem, wasWorking {
            logger.error("spoken prompts cannot be heard: playback goes on without them", metadata: ["problem": "\(problem)"])
        } else if problem == nil {
            logger.notice("spoken prompts work again")
        }
        problemChanged(problem)
    }

    // MARK: - Deciding

    private func take(_ input: Input) async {
        switch input {
        case .keyPressed:
            keysPending += 1
        case .keyHandled(let state):
            keysPending = max(0, keysPending - 1)
            guard enabled, keysPending == 0 else { return }
            speak(Self.keyResult(state))
        case .bookmarkAdded(let title):
            guard enabled else { return }
            speak(title.isEmpty ? "Bookmark added." : "Bookmark added: \(title).")
        case .player(let event):
            guard enabled else { return }
            if let text = await prompt(for: event) { speak(text) }
        case .barrier(let continuation):
            continuation.resume()
        }
    }

    /// What an event of the player says, if anything; keeps the sleep timer's count either way.
    private func prompt(for event: PlayerEvent) async -> String? {
        switch event {
        case .stateChanged(let state, let previous):
            let warning = await sleepWarning()
            guard keysPending == 0 else { return warning }
            if state.queueID != previous.queueID, state.queueID != nil, let chapter = Self.chapterText(state) {
                return "\(Self.bookTitle(state) ?? "").\n\(chapter)"
            }
            if state.queueID == previous.queueID, let current = state.currentChapter, current != previous.currentChapter,
               state.status != .stopped {
                return Self.chapterText(state)
            }
            return warning
        case .playing:
            return await sleepWarning()
        case .itemFailed(let item, _, _):
            return "Cannot play \(item.displayTitle)."
        default:
            return nil
        }
    }

    /// The sleep timer's warning, once, as its time left passes ``sleepWarning``.
    private func sleepWarning() async -> String? {
        let before = sleepLeft
        sleepLeft = await player.sleepTimeLeft
        guard let left = sleepLeft, left > .zero, left <= Self.sleepWarning else { return nil }
        guard before.map({ $0 > Self.sleepWarning }) ?? false else { return nil }
        return "Sleep timer: one minute left."
    }

    // MARK: - Texts

    /// What a media key left: "paused", "playing, chapter 4 of 12".
    static func keyResult(_ state: PlayerState) -> String {
        let status = switch state.status {
        case .playing: "playing"
        case .paused: "paused"
        case .stopped: "stopped"
        }
        guard state.status != .stopped, let current = state.currentChapter else { return status }
        return "\(status), chapter \(current + 1) of \(state.chapters.count)"
    }

    /// "Chapter 4 of 12: The Storm."
    static func chapterText(_ state: PlayerState) -> String? {
        guard let current = state.currentChapter, let chapter = state.chapter else { return nil }
        return "Chapter \(current + 1) of \(state.chapters.count): \(chapter.title)."
    }

    static func bookTitle(_ state: PlayerState) -> String? {
        state.current.map { $0.album ?? $0.displayTitle }
    }

    /// The text of a request, from what the player last published.
    static func text(for request: Request, view: PlayerView) -> String {
        let state = view.state
        guard state.current != nil, let progress = view.progress() else { return "Nothing is loaded." }
        let chapter = chapterText(state) ?? ""
        let timeLeft = timeLeftText(progress)
        switch request {
        case .chapter:
            return chapter
        case .timeLeft:
            return timeLeft
        case .status:
            let status = state.status == .playing ? "Playing." : state.status == .paused ? "Paused." : "Stopped."
            return "\(bookTitle(state) ?? "").\n\(chapter)\n\(status)\n\(timeLeft)"
        }
    }

    /// "12 minutes left in the chapter, 3 hours 5 minutes in the book.", at the current speed (the book's
    /// remaining time is already counted at it).
    static func timeLeftText(_ progress: BookProgress) -> String {
        let book = spoken(progress.remaining)
        guard let chapter = progress.chapterRemaining else { return "\(book) left in the book." }
        return "\(spoken(chapter)) left in the chapter, \(book) in the book."
    }

    /// A duration as said: "3 hours 5 minutes", "1 minute", "45 seconds"; whole minutes from a minute on.
    public static func spoken(_ duration: Duration) -> String {
        let seconds = max(0, Int(duration.components.seconds))
        guard seconds >= 60 else { return counted(seconds, "second") }
        let minutes = (seconds + 30) / 60
        let (hours, rest) = minutes.quotientAndRemainder(dividingBy: 60)
        switch (hours, rest) {
        case (0, _): return counted(rest, "minute")
        case (_, 0): return counted(hours, "hour")
        default: return "\(counted(hours, "hour")) \(counted(rest, "minute"))"
        }
    }

    private static func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}

/// What the prompter asks of the ``Player``: to lower the book while a prompt speaks (`true`) and bring it back
/// (`false`), and the sleep timer's playing time left (counted on the player's clock).
public protocol PromptedPlayer: Sendable {
    func duck(_ on: Bool) async
    var sleepTimeLeft: Duration? { get async }
}

extension Player: PromptedPlayer {
    public func duck(_ on: Bool) { setDucked(on) }
}

/// The prompter's way in: the player's events (as one of its observers), media keys and bookmarks, one stream in the
/// order they happened.
public struct PromptFeed: PlayerObserver {
    let continuation: AsyncStream<Prompter.Input>.Continuation

    public func handle(_ event: PlayerEvent) {
        switch event {
        case .stateChanged, .playing, .itemFailed: continuation.yield(.player(event))
        default: break
        }
    }

    /// Before a media key's command reaches the player.
    public func keyPressed() { continuation.yield(.keyPressed) }
    /// After the player handled it, whatever it did: `state` (the player's ``PlayerView/state`` then) is said.
    public func keyHandled(_ state: PlayerState) { continuation.yield(.keyHandled(state)) }
    public func bookmarkAdded(_ title: String) { continuation.yield(.bookmarkAdded(title)) }
    /// Returns once the prompter has handled everything fed before (its prompts asked of the engine).
    public func settled() async {
        await withCheckedContinuation { continuation.yield(.barrier($0)) }
    }
}
