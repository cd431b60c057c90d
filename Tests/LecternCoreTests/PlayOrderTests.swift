import Testing
@testable import LecternCore

@Suite struct PlayOrderTests {
    @Test func queueOrderStepsForwardAndBackAndWrapsOnlyWhenAsked() {
        var order = PlayOrder.queueOrder(count: 3, at: 2)
        #expect(order[order.position] == 2)
        #expect(order.next(wrapping: false) == nil)
        #expect(order.next(wrapping: true) == 0)
        order.position = 0
        #expect(order.previous(wrapping: false) == nil)
        #expect(order.previous(wrapping: true) == 2)
        #expect(!order.isShuffled)
    }

    @Test func aShuffledOrderStartsWithTheCurrentFileAndHoldsEveryFileOnce() {
        for _ in 0..<20 {
            let order = PlayOrder.shuffled(count: 6, first: 4)
            #expect(order[0] == 4)
            #expect(order.position == 0)
            #expect(order.queueIndices.sorted() == Array(0..<6))
            #expect(order.isShuffled)
        }
    }

    @Test func aKeptShuffledOrderIsTakenOnlyWhenItIsAPermutation() {
        let kept = PlayOrder.shuffled(keeping: [2, 0, 1], count: 3, at: 0)
        #expect(kept?.queueIndices == [2, 0, 1])
        #expect(kept?.position == 1)
        #expect(PlayOrder.shuffled(keeping: [2, 0, 0], count: 3, at: 0) == nil)
        #expect(PlayOrder.shuffled(keeping: [0, 1], count: 3, at: 0) == nil)
    }

    @Test func filesThatFailedAsTheNextOneAreSkippedWhenAsked() {
        var order = PlayOrder.queueOrder(count: 4, at: 0)
        order.failed = [1, 2]
        #expect(order.next(wrapping: false) == 1)
        #expect(order.next(wrapping: false, skippingFailed: true) == 3)
        order.failed = [1, 2, 3]
        #expect(order.next(wrapping: false, skippingFailed: true) == nil)
        #expect(order.next(wrapping: true, skippingFailed: true) == 0, "wrapping comes back to the current file")
    }
}
