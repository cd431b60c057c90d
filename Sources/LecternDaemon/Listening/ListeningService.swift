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
final class ListeningService: Sendable {
    static let interface = "org.lectern.Player1"

    let player: Player
    /// The player's last published state and when it was published (the sleep timer counts from there).
    private let latest = Mutex((state: PlayerState(), at: ContinuousClock.now))
    private let skipStep: Mutex<Duration>
    let object = Mutex<ExportedObject?>(nil)

    init(player: Player, skipStep: Duration) {
        self.player = player
        self.skipStep = Mutex(skipStep)
    }

    /// Feed the player's events here.
    func handle(_ event: PlayerEvent) {
        switch event {
        case .stateChanged(let state):
            latest.withLock { $0 = (state, .now) }
            object.withLock { $0 }?.update(Self.interface, properties(state))
        case .itemFailed(let itemID, let message):
            let state = latest.withLock { $0.state }
            guard let object = object.withLock({ $0 }), let index = state.queue.firstIndex(where: { $0.id == itemID }) else { return }
            let uri = state.queue[index].url.absoluteString
            object.update(Self.interface, ["LastError": .string("\(uri): \(message)")])
            try? object.emit(Self.interface, "FileFailed", [.int32(Int32(clamping: index)), .string(uri), .string(message)])
        default:
            break
        }
    }

    /// Files of a book left out at activation (missing, unreadable, not audio): FileFailed with file -1.
    func filesSkipped(_ files: [URL]) {
        guard let object = object.withLock({ $0 }), let last = files.last else { return }
        let message = "cannot be played (missing, unreadable, empty or not an audio file): left out of the book"
        for file in files {
            try? object.emit(Self.interface, "FileFailed", [.int32(-1), .string(file.absoluteString), .string(message)])
        }
        object.update(Self.interface, ["LastError": .string("\(last.absoluteString): \(message)")])
    }

    func publish(on object: ExportedObject) async {
        let state = await player.snapshot
        latest.withLock { $0 = (state, .now) }
        object.update(Self.interface, properties(state))
        object.update(Self.interface, ["SkipStep": .int64(skipStep.withLock { $0 }.microseconds), "LastError": .string("")])
        self.object.withLock { $0 = object }
    }

    // MARK: - Declaration

    func makeInterface() -> Interface {
        let player = self.player
        return Interface(Self.interface,
            methods: [
                Method("Skip", in: [("offset", .int64)]) { [self] call in
                    try requireCurrent()
                    await player.skip(by: .microseconds(call.arguments[0].int64 ?? 0))
                    return []
                },
                Method("SkipForward") { [self] _ in
                    try requireCurrent()
                    await player.skip(by: skipStep.withLock { $0 })
                    return []
                },
                Method("SkipBackward") { [self] _ in
                    try requireCurrent()
                    await player.skip(by: .zero - skipStep.withLock { $0 })
                    return []
                },
                Method("JumpToFile", in: [("file", .int32), ("position", .int64)]) { [self] call in
                    try requireCurrent()
                    try await Self.run { () async throws(PlayerError) in
                        try await player.jump(toFile: Int(call.arguments[0].int64 ?? -1),
                                              at: .microseconds(call.arguments[1].int64 ?? -1))
                    }
                    return []
                },
                Method("GoToChapter", in: [("chapter", .int32)]) { [self] call in
                    try requireCurrent()
                    try await Self.run { () async throws(PlayerError) in try await player.goTo(track: Int(call.arguments[0].int64 ?? -1)) }
                    return []
                },
                Method("NextChapter") { [self] _ in
                    try requireCurrent()
                    await player.next()
                    return []
                },
                Method("PreviousChapter") { [self] _ in
                    try requireCurrent()
                    await player.previous()
                    return []
                },
                Method("SetSleepTimer", in: [("duration", .int64)]) { call in
                    let microseconds = call.arguments[0].int64 ?? 0
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
                Method("GetStatus", out: [("status", .dictionary(key: .string, value: .variant))]) { [self] _ in
                    [status()]
                },
            ],
            properties: [
                Property("Speed", .double, access: .readwrite, set: { value in
                    guard let speed = value.double, speed.isFinite, speed > 0 else {
                        throw Self.invalidArgument("Speed is a finite number above 0 (\(PlayerState.minimumRate) to \(PlayerState.maximumRate)), not \(value)")
                    }
                    try await Self.run { () async throws(PlayerError) in try await player.setRate(speed) }
                }),
                Property("SkipStep", .int64, access: .readwrite, set: { [self] value in
                    guard let step = value.int64, (1_000_000...600_000_000).contains(step) else {
                        throw Self.invalidArgument("SkipStep is between 1 and 600 seconds, in microseconds, not \(value)")
                    }
                    skipStep.withLock { $0 = .microseconds(step) }
                    object.withLock { $0 }?.update(Self.interface, ["SkipStep": .int64(step)])
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
                Property("FilePosition", .int64, changes: .none, get: { [self] in .int64(progress()?.filePosition.microseconds ?? 0) }),
                Property("ChapterPosition", .int64, changes: .none, get: { [self] in .int64(progress()?.trackPosition.microseconds ?? 0) }),
                Property("BookPosition", .int64, changes: .none, get: { [self] in .int64(progress()?.bookPosition.microseconds ?? 0) }),
                Property("Remaining", .int64, changes: .none, get: { [self] in .int64(progress()?.remaining.microseconds ?? 0) }),
                Property("SleepTimeLeft", .int64, changes: .none, get: { [self] in .int64(sleepTimeLeft()?.microseconds ?? -1) }),
            ],
            signals: [SignalDecl("FileFailed", [("file", .int32), ("uri", .string), ("message", .string)])])
    }

    // MARK: - Values

    private func properties(_ state: PlayerState) -> [String: DBusValue] {
        let progress = state.progress(atFilePosition: state.track?.start ?? .zero)
        return [
            "Speed": .double(state.rate),
            "FileIndex": .int32(Int32(clamping: state.currentIndex ?? -1)),
            "FileCount": .int32(Int32(clamping: state.queue.count)),
            "ChapterIndex": .int32(Int32(clamping: state.currentTrack ?? -1)),
            "ChapterCount": .int32(Int32(clamping: state.tracks.count)),
            "ChapterTitle": .string(state.track?.title ?? ""),
            "ChapterLength": .int64(state.track?.length?.microseconds ?? 0),
            "BookLength": .int64(progress?.bookLength.microseconds ?? 0),
            "SleepTimer": .string(Self.sleepName(state.sleepTimer)),
        ]
    }

    private func progress() -> BookProgress? {
        let state = latest.withLock { $0.state }
        return state.progress(atFilePosition: player.positionClock.position())
    }

    /// Playing time left on the sleep timer, counted from the last published state; nil without a timer.
    private func sleepTimeLeft() -> Duration? {
        let (state, publishedAt) = latest.withLock { $0 }
        guard let timer = state.sleepTimer else { return nil }
        switch timer.mode {
        case .after:
            let counted = state.status == .playing ? ContinuousClock.now - publishedAt : .zero
            return max(.zero, (timer.remaining ?? .zero) - counted)
        case .endOfChapter:
            guard let end = state.track?.end else { return nil }
            return max(.zero, end - player.positionClock.position()) / state.rate
        }
    }

    /// Everything `lectern status` shows, in one reply.
    private func status() -> DBusValue {
        let state = latest.withLock { $0.state }
        var map: [String: DBusValue] = ["status": .string(state.status.player1Status), "speed": .double(state.rate)]
        if case .book(let id)? = state.queueID { map["book"] = .int64(id) }
        if let item = state.current {
            map["title"] = .string(item.album ?? item.displayTitle)
            if let author = item.albumArtists.first ?? item.artists.first { map["author"] = .string(author) }
        }
        if let progress = progress() {
            map["file"] = .int32(Int32(clamping: progress.fileIndex))
            map["files"] = .int32(Int32(clamping: progress.fileCount))
            map["filePosition"] = .int64(progress.filePosition.microseconds)
            map["fileLength"] = .int64(progress.fileLength?.microseconds ?? 0)
            map["chapter"] = .int32(Int32(clamping: progress.trackIndex))
            map["chapters"] = .int32(Int32(clamping: progress.trackCount))
            map["chapterTitle"] = .string(progress.trackTitle)
            map["chapterPosition"] = .int64(progress.trackPosition.microseconds)
            map["chapterLength"] = .int64(progress.trackLength?.microseconds ?? 0)
            map["bookPosition"] = .int64(progress.bookPosition.microseconds)
            map["bookLength"] = .int64(progress.bookLength.microseconds)
            map["remaining"] = .int64(progress.remaining.microseconds)
        }
        map["sleep"] = .string(Self.sleepName(state.sleepTimer))
        if let left = sleepTimeLeft() { map["sleepTimeLeft"] = .int64(left.microseconds) }
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

    /// From the last published state: no hop to the player (nor a copy of its whole queue) per call.
    private func requireCurrent() throws {
        guard latest.withLock({ $0.state.current != nil }) else {
            throw BusError(name: "org.lectern.Error.NotFound", message: "Nothing is loaded: open a book or files first")
        }
    }

    /// Runs a player command; its refusal becomes org.lectern.Error.InvalidArgument.
    private static func run(_ command: () async throws(PlayerError) -> Void) async throws {
        do { try await command() } catch { throw invalidArgument(error.description) }
    }
}
