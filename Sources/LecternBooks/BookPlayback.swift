import LecternCore
import LecternLibrary

/// A book's settings in the player's words and back: its volume, speed, shuffle, loop, the gain of its loudness
/// normalisation at the target in effect, its speech compressor, the intros and outros it skips and how it shortens
/// pauses. While a book plays, the book is the player's queue.
enum BookPlayback {
    /// The loudness normalisation brings books to (LUFS), and the level the speech compressor leaves unchanged.
    static var loudnessTarget: Double { LoudnessMeter.target.withLock { $0 } }

    /// `book`'s settings for the player.
    static func settings(_ book: Book) -> PlaybackSettings {
        PlaybackSettings(volume: book.volume, rate: book.speed, shuffle: book.shuffle, loop: LoopMode(book.loop),
                         gain: book.loudnessGain(target: loudnessTarget),
                         skip: SkipParts(intro: .seconds(book.skipIntro), outro: .seconds(book.skipOutro)),
                         compressor: compressor(book), skipSilence: skipSilence(book))
    }

    /// How `book` shortens its pauses; nil when it doesn't.
    static func skipSilence(_ book: Book) -> SkipSilence? {
        book.skipSilence ? SkipSilence(threshold: .seconds(book.silenceThreshold), amount: book.silenceAmount) : nil
    }

    /// The level `book`'s speech compressor leaves unchanged (the loudness target, as dBFS); nil when it is off.
    static func compressor(_ book: Book) -> Double? {
        book.compress ? loudnessTarget : nil
    }

    /// The settings of `book` as the player's `state` has them: what clients change through the player (volume, speed,
    /// shuffle, loop), the rest as the book has it.
    static func settings(of book: Book?, in state: PlayerState) -> BookSettings {
        BookSettings(volume: state.volume, speed: state.rate, shuffle: state.shuffle, loop: BookSettings.Loop(state.loop),
                     normalise: book?.normalise ?? false, skipIntro: book?.skipIntro ?? 0,
                     skipOutro: book?.skipOutro ?? 0, compress: book?.compress ?? false,
                     skipSilence: book?.skipSilence ?? false, silenceThreshold: book?.silenceThreshold ?? 0.5,
                     silenceAmount: book?.silenceAmount ?? 0.75)
    }
}

extension LoopMode {
    init(_ loop: BookSettings.Loop) {
        switch loop {
        case .none: self = .none
        case .chapter: self = .chapter
        case .book: self = .queue
        }
    }
}

extension BookSettings.Loop {
    init(_ mode: LoopMode) {
        switch mode {
        case .none: self = .none
        case .chapter: self = .chapter
        case .queue: self = .book
        }
    }
}
