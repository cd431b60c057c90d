import Foundation
import LecternCore
import Testing

/// A book's skip-silence setting reaches the engine with the book and goes with it; its values are kept in range,
/// and a pause is shortened as the listener set it, never to nothing.
@Suite struct SkipSilenceTests {
    @Test func aPauseIsShortenedByTheAmountBeyondTheThreshold() {
        let skip = SkipSilence(threshold: .milliseconds(500), amount: 0.8)
        #expect(skip.shortened(.milliseconds(300)) == .milliseconds(300))
        #expect(skip.shortened(.milliseconds(500)) == .milliseconds(500))
        #expect(abs((skip.shortened(.seconds(3)) - .seconds(1)) / .seconds(1)) < 1e-9)
        // All of the excess removed: every long pause lasts the threshold, not less.
        #expect(SkipSilence(threshold: .seconds(1), amount: 1).shortened(.seconds(20)) == .seconds(1))
    }

    @Test func valuesOutOfRangeAreClamped() {
        let low = SkipSilence(threshold: .milliseconds(10), amount: 0)
        #expect(low.threshold == .milliseconds(100))
        #expect(low.amount == 0.1)
        let high = SkipSilence(threshold: .seconds(60), amount: 5)
        #expect(high.threshold == .seconds(10))
        #expect(high.amount == 1)
        #expect(SkipSilence(threshold: .seconds(1), amount: .nan).amount == SkipSilence.standard.amount)
    }

    @Test func itGoesWithTheBook() async throws {
        try await withHarness { h in
            func told() -> [SkipSilence?] {
                h.engine.calls.compactMap { call -> SkipSilence?? in
                    if case .setSkipSilence(let skipping) = call { return .some(skipping) } else { return nil }
                }
            }
            // Off: the engine is not told anything.
            await h.player.open(makeItems(2), settings: PlaybackSettings(volume: 1.5))
            #expect(told().isEmpty)
            // On with the book; changed; settings applied again keep it; files opened without settings play
            // every pause as recorded.
            let on = SkipSilence.standard
            let shorter = SkipSilence(threshold: .milliseconds(300), amount: 1)
            await h.player.open(makeItems(2), settings: PlaybackSettings(skipSilence: on))
            await h.player.setSkipSilence(shorter)
            try await h.player.apply(PlaybackSettings(volume: 1, skipSilence: shorter))
            await h.player.open(makeItems(1))
            #expect(told() == [on, shorter, nil])
        }
    }
}
