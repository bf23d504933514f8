// nothing but a comment

   
