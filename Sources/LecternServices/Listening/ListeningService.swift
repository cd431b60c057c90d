import DBus
import Foundation
import LecternCore
import Synchronization

/// `org.lectern.Player1` on /org/lectern/Lectern1: listening to a book in the listener's terms — skips
/// across files, jumps, chapters, speed, the sleep timer and where one is in the file, the chapter and the
/// book. Documented in dbus/org.lectern.Player1.xml.
///
/// Indices are 0-based (files in book order, chapters across the whole book); positions and durations are
/// microseconds. Properties that change only at events (chapter, file, speed, sleep mode) send
/// PropertiesChanged; the positions move with playback and are read live (like MPRIS Position).
public final class ListeningService: PlayerObserver {
    public static let interface = "org.lectern.Player1"

    private let skipStep: Mutex<Duration>
    /// Set once the object is exported (``publish(on:player:)``): the player's events before are in the state it is
    /// published with.
    public let object = Mutex<ExportedObject?>(nil)

    public init(skipStep: Duration) {
        self.skipStep = Mutex(skipStep)
    }

    /// The player's events, as its observer.
    public func handle(_ event: PlayerEvent) {
        switch event {
        case .stateChanged(let state, let previous):
            guard let object = object.withLock({ $0 }) else { return }
            object.update(Self.interface, properties(state))
            if state.lyricsLine != previous.lyricsLine || state.lyricsLine != nil && state.current?.id != previous.current?.id {
                try? object.emit(Self.interface, "LyricsLineChanged", Self.lyricsLine(state))
            }
        case .itemFailed(let item, let index, let message):
            guard let object = object.withLock({ $0 }) else { return }
            let uri = item.url.absoluteString
            object.update(Self.interface, ["LastError": .string("\(uri): \(message)")])
            try? object.emit(Self.interface, "FileFailed", [.int32(Int32(clamping: index)), .string(uri), .string(message)])
        default:
            break
        }
    }

    /// Files of a book left out at activation (missing, unreadable, not audio): FileFailed with file -1.
    public func filesSkipped(_ files: [(URL, missing: Bool)]) {
        guard let object = object.withLock({ $0 }), !files.isEmpty else { return }
        func message(missing: Bool) -> String {
            missing ? "missing: no longer on disk, left out of the book until it is back"
                : "cannot be played (unreadable, empty or not an audio file): left out of the book"
        }
        for (file, missing) in files {
            try? object.emit(Self.interface, "FileFailed", [.int32(-1), .string(file.absoluteString), .string(message(missing: missing))])
        }
        let (last, missing) = files[files.count - 1]
        object.update(Self.interface, ["LastError": .string("\(last.absoluteString): \(message(missing: missing))")])
    }

    /// The step of SkipForward / SkipBackward, from a client or a reloaded configuration.
    public func setSkipStep(_ step: Duration) {
        skipStep.withLock { $0 = step }
        object.withLock { $0 }?.update(Self.interface, ["SkipStep": .int64(step.microseconds)])
    }

    public func publish(on object: ExportedObject, player: Player) {
        object.update(Self.interface, properties(player.view.state))
        object.update(Self.interface, ["SkipStep": .int64(skipStep.withLock { $0 }.microseconds), "LastError": .string("")])
        self.object.withLock { $0 = object }
    }

    // MARK: - Declaration

    public func makeInterface(player: Player) -> Interface {
        let view = player.view
        return Interface(Self.interface,
            methods: [
                Method("Skip", in: [("offset", .int64)]) { call in
                    try Self.requireCurrent(view)
                    await player.skip(by: .microseconds(try call.argument(0, as: Int64.self)))
                    return []
                },
                Method("SkipForward") { [self] _ in
                    try Self.requireCurrent(view)
                    await player.skip(by: skipStep.withLock { $0 })
                    return []
                },
                Method("SkipBackward") { [self] _ in
                    try Self.requireCurrent(view)
                    await player.skip(by: .zero - skipStep.withLock { $0 })
                    return []
                },
                Method("JumpToFile", in: [("file", .int32), ("position", .int64)]) { call in
                    let (file, position) = try call.arguments(Int32.self, Int64.self)
                    try Self.requireCurrent(view)
                    try await Self.run { () async throws(PlayerError) in
                        try await player.jump(toFile: Int(file), at: .microseconds(position))
                    }
                    return []
                },
                Method("GoToChapter", in: [("chapter", .int32)]) { call in
                    let chapter: Int32 = try call.argument(0)
                    try Self.requireCurrent(view)
                    try await Self.run { () async throws(PlayerError) in try await player.goTo(chapter: Int(chapter)) }
                    return []
                },
                Method("NextChapter") { _ in
                    try Self.requireCurrent(view)
                    await player.next()
                    return []
                },
                Method("PreviousChapter") { _ in
                    try Self.requireCurrent(view)
                    await player.previous()
                    return []
                },
                Method("SetSleepTimer", in: [("duration", .int64)]) { call in
                    let microseconds: Int64 = try call.argument(0)
                    guard microseconds > 0 else {
                        throw Self.invalidArgument("the sleep timer needs a positive duration in microseconds (CancelSleepTimer turns it off)")
                    }
                    try await Self.run { () async throws(PlayerError) in try await player.setSleepTimer(.after(.microseconds(microseconds))) }
                    return []
                },
                Method("SleepAtChapterEnd") { _ in
                    try await Self.run { () async throws(PlayerError) in try await player.setSleepTimer(.endOfChapter) }
                    return []
                },
                Method("CancelSleepTimer") { _ in
                    try await Self.run { () async throws(PlayerError) in try await player.setSleepTimer(nil) }
                    return []
                },
                Method("Reshuffle") { _ in
                    await player.reshuffle()
                    return []
                },
                Method("GetStatus", out: [("status", .dictionary(key: .string, value: .variant))]) { _ in
                    [Self.status(view)]
                },
            ],
            properties: [
                Property("Speed", .double, access: .readwrite, set: { value in
                    let speed: Double = try value.decoded()
                    guard speed.isFinite, speed > 0 else {
                        throw Self.invalidArgument("Speed is a finite number above 0 (\(PlayerState.minimumRate) to \(PlayerState.maximumRate)), not \(value)")
                    }
                    try await Self.run { () async throws(PlayerError) in try await player.setRate(speed) }
                }),
                Property("SkipStep", .int64, access: .readwrite, set: { [self] value in
                    let step: Int64 = try value.decoded()
                    guard (1_000_000...600_000_000).contains(step) else {
                        throw Self.invalidArgument("SkipStep is between 1 and 600 seconds, in microseconds, not \(value)")
                    }
                    setSkipStep(.microseconds(step))
                }),
                Property("FileIndex", .int32),
                Property("FileCount", .int32),
                Property("ChapterIndex", .int32),
                Property("ChapterCount", .int32),
                Property("ChapterTitle", .string),
                Property("ChapterLength", .int64),
                Property("BookLength", .int64),
                Property("SleepTimer", .string),
                Property("LastError", .string),
                Property("LyricsLine", .string),
                Property("LyricsLineIndex", .int32),
                Property("LyricsNextLineStart", .int64),
                Property("FilePosition", .int64, changes: .none, get: { .int64(view.progress()?.filePosition.microseconds ?? 0) }),
                Property("ChapterPosition", .int64, changes: .none, get: { .int64(view.progress()?.chapterPosition.microseconds ?? 0) }),
                Property("BookPosition", .int64, changes: .none, get: { .int64(view.progress()?.bookPosition.microseconds ?? 0) }),
                Property("Remaining", .int64, changes: .none, get: { .int64(view.progress()?.remaining.microseconds ?? 0) }),
                Property("SleepTimeLeft", .int64, changes: .none, get: { .int64(view.sleepTimeLeft()?.microseconds ?? -1) }),
            ],
            signals: [SignalDecl("LyricsLineChanged", [("index", .int32), ("start", .int64), ("next", .int64), ("text", .string)]),
                      SignalDecl("FileFailed", [("file", .int32), ("uri", .string), ("message", .string)])])
    }

    // MARK: - Values

    private func properties(_ state: PlayerState) -> [String: DBusValue] {
        let progress = state.progress(atFilePosition: state.chapter?.start ?? .zero)
        return [
            "Speed": .double(state.rate),
            "FileIndex": .int32(Int32(clamping: state.currentIndex ?? -1)),
            "FileCount": .int32(Int32(clamping: state.queue.count)),
            "ChapterIndex": .int32(Int32(clamping: state.currentChapter ?? -1)),
            "ChapterCount": .int32(Int32(clamping: state.chapters.count)),
            "ChapterTitle": .string(state.chapter?.title ?? ""),
            "ChapterLength": .int64(state.chapter?.length?.microseconds ?? 0),
            "BookLength": .int64(progress?.bookLength.microseconds ?? 0),
            "SleepTimer": .string(Self.sleepName(state.sleepTimer)),
            "LyricsLine": .string(state.currentLyricsLine?.text ?? ""),
            "LyricsLineIndex": .int32(Int32(clamping: state.lyricsLine?.index ?? -1)),
            "LyricsNextLineStart": .int64(state.lyricsNextLineStart?.microseconds ?? -1),
        ]
    }

    /// LyricsLineChanged's arguments: index, start, next start, text.
    private static func lyricsLine(_ state: PlayerState) -> [DBusValue] {
        let line = state.currentLyricsLine
        return [.int32(Int32(clamping: state.lyricsLine?.index ?? -1)), .int64(line?.start.microseconds ?? -1),
                .int64(state.lyricsNextLineStart?.microseconds ?? -1), .string(line?.text ?? "")]
    }

    /// Everything `lectern status` shows, in one reply.
    private static func status(_ view: PlayerView) -> DBusValue {
        let state = view.state
        var map: [String: DBusValue] = ["status": .string(state.status.player1Status), "speed": .double(state.rate)]
        if case .book(let id)? = state.queueID { map["book"] = .int64(id) }
        if let item = state.current {
            map["title"] = .string(item.album ?? item.displayTitle)
            if let author = item.albumArtists.first ?? item.artists.first { map["author"] = .string(author) }
        }
        if let progress = view.progress() {
            map["file"] = .int32(Int32(clamping: progress.fileIndex))
            map["files"] = .int32(Int32(clamping: progress.fileCount))
            map["filePosition"] = .int64(progress.filePosition.microseconds)
            map["fileLength"] = .int64(progress.fileLength?.microseconds ?? 0)
            map["chapter"] = .int32(Int32(clamping: progress.chapterIndex))
            map["chapters"] = .int32(Int32(clamping: progress.chapterCount))
            map["chapterTitle"] = .string(progress.chapterTitle)
            map["chapterPosition"] = .int64(progress.chapterPosition.microseconds)
            map["chapterLength"] = .int64(progress.chapterLength?.microseconds ?? 0)
            if let left = progress.chapterRemaining { map["chapterRemaining"] = .int64(left.microseconds) }
            map["bookPosition"] = .int64(progress.bookPosition.microseconds)
            map["bookLength"] = .int64(progress.bookLength.microseconds)
            map["remaining"] = .int64(progress.remaining.microseconds)
        }
        map["sleep"] = .string(Self.sleepName(state.sleepTimer))
        if let left = view.sleepTimeLeft() { map["sleepTimeLeft"] = .int64(left.microseconds) }
        return .vardict(map)
    }

    /// The sleep timer as SleepTimer and GetStatus name it: "off", "time" or "chapter".
    static func sleepName(_ timer: SleepTimerStatus?) -> String {
        switch timer?.mode {
        case nil: "off"
        case .after?: "time"
        case .endOfChapter?: "chapter"
        }
    }

    // MARK: - Errors

    static func invalidArgument(_ message: String) -> BusError { BusError(name: "org.lectern.Error.InvalidArgument", message: message) }

    /// From the published state: no hop to the player per call.
    private static func requireCurrent(_ view: PlayerView) throws {
        guard view.state.current != nil else {
            throw BusError(name: "org.lectern.Error.NotFound", message: "Nothing is loaded: open a book or files first")
        }
    }

    /// Runs a player command; its refusal becomes org.lectern.Error.InvalidArgument.
    private static func run(_ command: () async throws(PlayerError) -> Void) async throws {
        do { try await command() } catch { throw invalidArgument(error.description) }
    }
}
