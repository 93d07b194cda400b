package lang

import (
	"math"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// sumLibrary adds list.sum(), which CEL lacks and workflows need for totals.
// It is pure and linear in the list's length, which payload limits bound.
// One implementation serves both overloads, so that an evaluator working on
// unchecked expressions (all variables dyn) gets the same result: int when
// every element is an integer, double as soon as one is not.
func sumLibrary() cel.EnvOption {
	return cel.Function("sum",
		cel.MemberOverload("list_int_sum", []*cel.Type{cel.ListType(cel.IntType)}, cel.IntType),
		cel.MemberOverload("list_double_sum", []*cel.Type{cel.ListType(cel.DoubleType)}, cel.DoubleType),
		cel.SingletonUnaryBinding(sumList, traits.IterableType),
	)
}

func sumList(v ref.Val) ref.Val {
	l, ok := v.(traits.Lister)
	if !ok {
		return types.NewErr("sum: receiver is not a list")
	}
	var i int64
	var f float64
	isDouble := false
	it := l.Iterator()
	for it.HasNext() == types.True {
		switch e := it.Next().(type) {
		case types.Int:
			if (e > 0 && i > math.MaxInt64-int64(e)) || (e < 0 && i < math.MinInt64-int64(e)) {
				return types.NewErr("sum: integer overflow")
			}
			i += int64(e)
		case types.Uint:
			if uint64(e) > math.MaxInt64 || i > math.MaxInt64-int64(e) {
				return types.NewErr("sum: integer overflow")
			}
			i += int64(e)
		case types.Double:
			isDouble = true
			f += float64(e)
		default:
			return types.NewErr("sum: element of type %s is not a number", e.Type())
		}
	}
	if isDouble {
		return types.Double(f + float64(i))
	}
	return types.Int(i)
}
