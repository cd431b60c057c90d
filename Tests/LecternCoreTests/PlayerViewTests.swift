import Foundation
import LecternCore
import Synchronization
import Testing

/// `Player.view`: the one published copy of the player's state that the D-Bus faces read.
@Suite struct PlayerViewTests {
    /// Reads the view from inside the observer call: what a Get answered on another thread would see then.
    final class ViewReader: PlayerObserver {
        let view = Mutex<PlayerView?>(nil)
        let seen = Mutex<[(told: PlayerState, read: PlayerState?)]>([])
        func handle(_ event: PlayerEvent) {
            guard case .stateChanged(let state, _) = event else { return }
            let read = view.withLock { $0 }?.state
            seen.withLock { $0.append((state, read)) }
        }
    }

    @Test func observersFindTheStateTheyAreToldOfAlreadyInTheView() async throws {
        let reader = ViewReader()
        let log = EventLog()
        let player = Player(engine: FakeEngine(), tickClock: ManualClock(), observers: [reader, log])
        reader.view.withLock { $0 = player.view }
        await player.open(makeItems(3), startAt: 1, position: .seconds(30))
        try await player.setVolume(0.5)
        await player.next()

        let seen = reader.seen.withLock { $0 }
        #expect(seen.count >= 3)
        #expect(seen.allSatisfy { $0.told == $0.read })
        #expect(player.view.state == (await player.snapshot))
        #expect(player.view.state.volume == 0.5)
        #expect(player.view.state.currentIndex == 2)
        // Every observer hears the same events, in the same order.
        #expect(log.states == seen.map(\.told))
    }

    @Test func eachStateChangeCarriesTheStatePublishedBeforeIt() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            try await h.player.setRate(1.5)
            await h.player.pause()
            let changes = h.log.all.compactMap { event -> (PlayerState, PlayerState)? in
                if case .stateChanged(let state, let previous) = event { (state, previous) } else { nil }
            }
            #expect(changes.count >= 3)
            #expect(changes.first?.1 == PlayerState())
            for (earlier, later) in zip(changes, changes.dropFirst()) {
                #expect(later.1 == earlier.0)
            }
        }
    }

    @Test func theViewCountsTheSleepTimerTheWayThePlayerDoes() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            #expect(h.player.view.sleepTimeLeft() == nil)
            try await h.player.setSleepTimer(.after(.seconds(30)))
            await h.play(for: .seconds(10))
            await h.player.pause()
            #expect(h.player.view.sleepTimeLeft() == .seconds(20))
            #expect(await h.player.sleepTimeLeft == .seconds(20))

            // The same timer set again: nothing a client sees in the state changes, the time left does.
            try await h.player.setSleepTimer(.after(.seconds(30)))
            #expect(h.player.view.sleepTimeLeft() == .seconds(30))

            try await h.player.setSleepTimer(nil)
            #expect(h.player.view.sleepTimeLeft() == nil)
        }
    }
}
