variable "models" {
  default = ["cnn", "vit"]
}

command "prepare" {
  run = ["sh", "-c", "echo data > $GATEPIPE_OUT_DIR/data.txt"]
  outputs = { data = "data.txt" }
}

command "train" {
  for_each = toset(var.models)
  run      = ["sh", "-c", "cat ${command.prepare.outputs["data"]} > $GATEPIPE_OUT_DIR/${each.key}.txt"]
}
