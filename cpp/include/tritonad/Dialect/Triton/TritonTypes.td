#ifndef TRITONAD_TRITON_TYPES
#define TRITONAD_TRITON_TYPES

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "tritonad/Dialect/Triton/TritonDialect.td"

class TT_TypeDef<string name, string typeMnemonic> : TypeDef<Triton_Dialect, name> {
  let mnemonic = typeMnemonic;
}

// `!tt.ptr<f32>` (address space 1 is left out when printing) or
// `!tt.ptr<f32, 3>`; the pointee may be a tensor (block pointers).
def TT_PtrType : TT_TypeDef<"Pointer", "ptr"> {
  let summary = "pointer";
  let parameters = (ins "Type":$pointeeType, "int":$addressSpace);
  let builders = [
    TypeBuilderWithInferredContext<(ins "Type":$pointeeType,
                                        CArg<"int", "1">:$addressSpace), [{
      return $_get(pointeeType.getContext(), pointeeType, addressSpace);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let skipDefaultBuilders = 1;
}

def TT_Float : AnyTypeOf<[F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F16, BF16, F32, F64], "floating-point">;
def TT_FloatTensor : StaticShapeTensorOf<[TT_Float]>;
def TT_FloatLike : AnyTypeOf<[TT_Float, TT_FloatTensor]>;

def TT_BoolTensor : StaticShapeTensorOf<[I1]>;
def TT_BoolLike : AnyTypeOf<[I1, TT_BoolTensor]>;

def TT_Int : AnyTypeOf<[I1, I8, I16, I32, I64], "integer">;
def TT_IntTensor : StaticShapeTensorOf<[TT_Int]>;
def TT_IntLike : AnyTypeOf<[TT_Int, TT_IntTensor]>;

def TT_I32Like : AnyTypeOf<[I32, StaticShapeTensorOf<[I32]>]>;
def TT_I64Like : AnyTypeOf<[I64, StaticShapeTensorOf<[I64]>]>;

def TT_Ptr : Type<CPred<"::llvm::isa<::mlir::triton::PointerType>($_self) && "
                        "!::llvm::isa<::mlir::RankedTensorType>("
                        "::llvm::cast<::mlir::triton::PointerType>($_self).getPointeeType())">,
                  "scalar pointer">;
def TT_PtrTensor : StaticShapeTensorOf<[TT_Ptr]>;
def TT_PtrLike : AnyTypeOf<[TT_Ptr, TT_PtrTensor]>;
def TT_TensorPtr : Type<CPred<"::llvm::isa<::mlir::triton::PointerType>($_self) && "
                              "::llvm::isa<::mlir::RankedTensorType>("
                              "::llvm::cast<::mlir::triton::PointerType>($_self).getPointeeType())">,
                        "pointer to a tensor (block pointer)", "::mlir::triton::PointerType">;

def TT_FpIntTensor : StaticShapeTensorOf<[TT_Float, TT_Int]>;
def TT_Tensor : StaticShapeTensorOf<[TT_Float, TT_Int, TT_Ptr]>;
def TT_Type : AnyTypeOf<[TT_FloatLike, TT_IntLike, TT_PtrLike, TT_TensorPtr]>;

#endif
