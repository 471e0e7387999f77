func.func @grad(%dy: tensor<?x?x16xf32>, %tokens: tensor<?x?xi64>) -> tensor<50x16xf32> {
  %0 = txl.embedding_grad %dy, %tokens : tensor<?x?x16xf32>, tensor<?x?xi64> -> tensor<50x16xf32>
  return %0 : tensor<50x16xf32>
}
func.func @grad_into(%dy: tensor<?x?x16xf32>, %tokens: tensor<?x?xi64>, %init: tensor<50x16xf32>) -> tensor<50x16xf32> {
  %0 = txl.embedding_grad %dy, %tokens into %init : tensor<?x?x16xf32>, tensor<?x?xi64> -> tensor<50x16xf32>
  return %0 : tensor<50x16xf32>
}
