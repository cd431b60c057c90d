import Foundation

/// What the user asked for, not what the pipeline passes through (a seek briefly pauses the
/// pipeline; clients must not see that).
public enum PlaybackStatus: Sendable, Equatable {
    case playing, paused, stopped
}

/// What plays again when the end is reached.
public enum LoopMode: Sendable, Equatable, CaseIterable {
    /// Nothing: the end of the queue stops and finishes it.
    case none
    /// The current chapter, over and over (a file of one chapter follows itself gaplessly).
    case chapter
    /// The whole queue, in play order: its first file follows its last.
    case queue
}

/// Volume, rate, shuffle, loop, loudness gain, compressor and the parts of files skipped together: a book's
/// settings, applied in one step when it is opened.
public struct PlaybackSettings: Sendable, Equatable {
    public var volume: Double
    public var rate: Double
    public var shuffle: Bool
    public var loop: LoopMode
    /// The book's loudness normalisation, linear, applied with the volume; 1 leaves the sound as it is.
    public var gain: Double
    /// The intro and outro of every file not played.
    public var skip: SkipParts
    /// The speech compressor: nil (off: the sound as it is), or the level in dBFS it leaves unchanged.
    public var compressor: Double?
    /// Pauses shortened: nil (off), or how.
    public var skipSilence: SkipSilence?
    public init(volume: Double = 1, rate: Double = 1, shuffle: Bool = false, loop: LoopMode = .none, gain: Double = 1,
                skip: SkipParts = SkipParts(), compressor: Double? = nil, skipSilence: SkipSilence? = nil) {
        self.volume = volume
        self.rate = rate
        self.shuffle = shuffle
        self.loop = loop
        self.gain = gain
        self.skip = skip
        self.compressor = compressor
        self.skipSilence = skipSilence
    }
}

/// Skip silence: a pause longer than `threshold` (in the file's own time) is shortened by `amount` of what lasts
/// beyond it, so a 3 s pause with a threshold of 0.5 s and an amount of 0.8 lasts 1 s; a pause is never cut to
/// nothing, and sound is never cut. Positions stay in the file's own time (docs/decisions/skip-silence.md).
public struct SkipSilence: Sendable, Equatable {
    public var threshold: Duration
    public var amount: Double

    /// The thresholds allowed, in seconds.
    public static let thresholds: ClosedRange<Double> = 0.1...10
    /// The amounts allowed: a tenth of a pause's excess removed, up to all of it.
    public static let amounts: ClosedRange<Double> = 0.1...1
    /// What a listener who only turns it on gets.
    public static let standard = SkipSilence(threshold: .milliseconds(500), amount: 0.75)

    /// Each clamped to its range.
    public init(threshold: Duration, amount: Double) {
        let seconds = Double(threshold.components.seconds) + Double(threshold.components.attoseconds) / 1e18
        self.threshold = .seconds(min(max(Self.thresholds.lowerBound, seconds), Self.thresholds.upperBound))
        self.amount = amount.isFinite ? min(max(Self.amounts.lowerBound, amount), Self.amounts.upperBound) : Self.standard.amount
    }

    /// How long a pause of `pause` (the file's time) lasts played.
    public func shortened(_ pause: Duration) -> Duration {
        pause <= threshold ? pause : threshold + (pause - threshold) * (1 - amount)
    }
}

/// The first and last seconds of every file that are not played (a book whose parts each open and close with the
/// same announcement): a file starts at `intro` and playing goes on to the next one at `outro` before its end. A
/// file no longer than both together, or whose duration is not known, plays whole. Positions stay in the file's own
/// time (docs/decisions/skip-intros-and-outros.md).
public struct SkipParts: Sendable, Equatable {
    public var intro: Duration
    public var outro: Duration
    /// The most each may be.
    public static let maximum = Duration.seconds(600)

    /// Each clamped to 0 ... ``maximum``.
    public init(intro: Duration = .zero, outro: Duration = .zero) {
        self.intro = min(max(.zero, intro), Self.maximum)
        self.outro = min(max(.zero, outro), Self.maximum)
    }

    public var isOff: Bool { intro == .zero && outro == .zero }

    /// Whether the parts are skipped in a file of `duration`: known, and longer than both together.
    private func applies(to duration: Duration?) -> Bool {
        guard !isOff, let duration else { return false }
        return intro + outro < duration
    }

    /// Where a file of `duration` starts playing.
    public func start(ofFileLasting duration: Duration?) -> Duration {
        applies(to: duration) ? intro : .zero
    }

    /// Where playing a file of `duration` goes on to the next one; nil while its duration is unknown.
    public func end(ofFileLasting duration: Duration?) -> Duration? {
        guard let duration else { return nil }
        return applies(to: duration) ? duration - outro : duration
    }

    /// How long a file of `duration` plays from its start; nil while unknown.
    public func playedLength(ofFileLasting duration: Duration?) -> Duration? {
        end(ofFileLasting: duration).map { $0 - start(ofFileLasting: duration) }
    }
}

/// The identity of a queue of the player.
public enum QueueID: Hashable, Sendable {
    /// The files of a book of the library, by the book's id.
    case book(Int64)
    /// Files opened by URI, numbered in the order they were opened (1, 2, ...).
    case opened(Int)
}

/// A snapshot of everything a client can see of the player, published after every change.
public struct PlayerState: Sendable, Equatable {
    public var status: PlaybackStatus = .stopped
    /// Which queue this is: a book of the library, or files opened otherwise (numbered per daemon); nil before the
    /// first. Clients' track ids name it, so a new queue with the same identity keeps its ids (a book's are stable).
    public var queueID: QueueID?
    public var queue: [MediaItem] = []
    /// Index into `queue` of the current item.
    public var currentIndex: Int?
    /// The chapters of the queue's files, in queue order (see ``Chapter/chapters(of:)``).
    public var chapters: [Chapter] = []
    /// Index into `chapters` of the chapter being played.
    public var currentChapter: Int?
    /// The play order (queue indices) while shuffled; stays the same until reshuffled.
    public var shuffleOrder: [Int]?
    public var sleepTimer: SleepTimerStatus?
    public var loop: LoopMode = .none
    public var shuffle = false
    public var volume = 1.0
    public var rate = 1.0
    /// The last error the engine reported for the current item, cleared by the next load.
    public var lastError: String?
    /// Where playback is in the current file's synced lyrics; nil when it has none, or while stopped.
    public var lyricsLine: LyricsCursor?
    /// Whether `next()` / `previous()` would change the current item.
    public var canGoNext = false
    public var canGoPrevious = false
    /// The parts of every file not played (``PlaybackSettings/skip``).
    public var skip = SkipParts()
    /// Whether the current item can be moved in: a file can; a stream once its server allows ranges and its length is
    /// known (``EngineEvent/seekability(_:seekable:)``), not before.
    public var canSeek = true

    public static let minimumRate = 0.5
    public static let maximumRate = 3.0
    /// Above 1 amplifies, through a gain stage with a limiter (nothing clips); GStreamer's volume element goes no
    /// higher.
    public static let maximumVolume = 10.0
    /// The most a loudness gain may amplify (+30 dB).
    public static let maximumGain = 31.622776601683793

    /// A volume a client asked for, as the player sets it: within 0 ... ``maximumVolume``, and 0 below 0.0001
    /// (−80 dB, silence to the ear): no state a listener could not have chosen, such as 2.2e-308.
    public static func volume(_ requested: Double) -> Double {
        let clamped = min(max(0, requested), maximumVolume)
        return clamped < 0.0001 ? 0 : clamped
    }

    public init() {}

    public var current: MediaItem? { currentIndex.map { queue[$0] } }
    /// The synced line being heard, when there is one.
    public var currentLyricsLine: Lyrics.Line? {
        guard let index = lyricsLine?.index, let lines = current?.lyrics?.lines, lines.indices.contains(index) else { return nil }
        return lines[index]
    }
    /// When the line after the one heard starts (a position in the file): nil after the last line, or without synced
    /// lyrics.
    public var lyricsNextLineStart: Duration? {
        guard let cursor = lyricsLine, let lines = current?.lyrics?.lines else { return nil }
        let next = cursor.index.map { $0 + 1 } ?? 0
        return lines.indices.contains(next) ? lines[next].start : nil
    }
    public var chapter: Chapter? { currentChapter.map { chapters[$0] } }

    /// Where item `index` starts playing: after its intro when skipped.
    public func fileStart(ofItem index: Int) -> Duration { skip.start(ofFileLasting: queue[index].duration) }

    /// Where playing item `index` goes on to the next: before its outro when skipped; nil while its duration is unknown.
    public func fileEnd(ofItem index: Int) -> Duration? { skip.end(ofFileLasting: queue[index].duration) }

    /// Where chapter `index` starts playing: the first chapter of a file where its file does, the others at their mark.
    public func entry(ofChapter index: Int) -> Duration {
        let chapter = chapters[index]
        return chapter.start == .zero ? fileStart(ofItem: chapter.itemIndex) : chapter.start
    }

    /// Where playing chapter `index` ends: the last chapter of a file where its file does; nil while unknown.
    public func playedEnd(ofChapter index: Int) -> Duration? {
        let chapter = chapters[index]
        guard let end = chapter.end else { return nil }
        return min(end, fileEnd(ofItem: chapter.itemIndex) ?? end)
    }
}

/// Where playback is in the current file's synced lyrics (``Lyrics/lines``): the line heard.
public struct LyricsCursor: Sendable, Equatable {
    /// The line being heard: nil before the first one.
    public var index: Int?

    public init(index: Int?) {
        self.index = index
    }

    /// Where `position` is in `lyrics` (a binary search); nil when they are not synced.
    public init?(_ lyrics: Lyrics, at position: Duration) {
        guard lyrics.isSynced else { return nil }
        index = lyrics.lineIndex(at: position)
    }

    /// Whether `position` is still in this line of `lyrics`, from its start until the next line's (before the first
    /// line: until its start); in O(1).
    public func holds(_ position: Duration, in lyrics: Lyrics) -> Bool {
        let lines = lyrics.lines
        if let index {
            guard lines.indices.contains(index), lines[index].start <= position else { return false }
        }
        let next = index.map { $0 + 1 } ?? 0
        return lyrics.isSynced && (next >= lines.count || position < lines[next].start)
    }
}
